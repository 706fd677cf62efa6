//! `layering LAYERS_TOML [ROOT]`: checks that the top-level modules of each crate named in
//! LAYERS_TOML (`[gateway]` for `ROOT/gateway/src`, ...) form a stack. Every top-level module
//! sits in one layer and imports (`crate::x`, outside line comments) only modules of its own
//! layer or below, with no import cycle; a directory counts as one module, and `lib.rs`,
//! `main.rs` and `bin/` are entry points, not modules. Exits 1 naming every violation (a
//! module in no layer, an upward import, a cycle), 2 on a usage or read error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A module and the modules it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// One crate's stack: its layers bottom to top, and files that are not part of it.
#[derive(Debug, Clone, PartialEq)]
struct Section {
    name: String,
    /// (layer name, modules), bottom to top.
    layers: Vec<(String, Vec<String>)>,
    skip: Vec<String>,
}

fn strings(v: Option<&toml::Value>, what: &str) -> Result<Vec<String>, String> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    v.as_array()
        .ok_or_else(|| format!("{what}: expected a list of strings"))?
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{what}: expected a list of strings"))
        })
        .collect()
}

/// The sections of a layers file, in name order.
fn parse(text: &str) -> Result<Vec<Section>, String> {
    let root: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, v) in &root {
        let t = v
            .as_table()
            .ok_or_else(|| format!("[{name}]: expected a table"))?;
        for key in t.keys() {
            if key != "layer" && key != "skip" {
                return Err(format!("[{name}]: unknown key {key:?} (layer, skip)"));
            }
        }
        let mut layers = Vec::new();
        for (i, l) in t
            .get("layer")
            .and_then(|l| l.as_array())
            .ok_or_else(|| format!("[{name}]: no [[{name}.layer]]"))?
            .iter()
            .enumerate()
        {
            let what = format!("[[{name}.layer]] {}", i + 1);
            let l = l.as_table().ok_or_else(|| format!("{what}: a table"))?;
            let layer = l
                .get("name")
                .and_then(|n| n.as_str())
                .ok_or_else(|| format!("{what}: no name"))?;
            layers.push((layer.to_owned(), strings(l.get("modules"), &what)?));
        }
        out.push(Section {
            name: name.clone(),
            layers,
            skip: strings(t.get("skip"), &format!("[{name}] skip"))?,
        });
    }
    Ok(out)
}

/// The `crate::x` imports of every top-level module of `src` (a directory counts as one
/// module). Line comments are skipped: doc comments may name any module.
fn imports(src: &Path, skip: &[String]) -> Result<Graph, String> {
    let mut graph = Graph::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(src).expect("under src");
            let top = rel.components().next().expect("a component");
            let top = top.as_os_str().to_string_lossy();
            let module = top.strip_suffix(".rs").unwrap_or(&top).to_owned();
            // Entry points (binaries, the crate roots) sit above every module.
            if matches!(module.as_str(), "lib" | "main" | "bin") || skip.contains(&module) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let deps = graph.entry(module.clone()).or_default();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            for line in text.lines() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let mut rest = code;
                while let Some(at) = rest.find("crate::") {
                    rest = &rest[at + "crate::".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module {
                        deps.insert(name);
                    }
                }
            }
        }
    }
    Ok(graph)
}

/// Every violation: a module in no layer (or in two), an import of a higher layer, a cycle.
fn violations(layers: &[(String, Vec<String>)], graph: &Graph) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for m in layers.iter().flat_map(|(_, mods)| mods) {
        if !seen.insert(m) {
            out.push(format!("{m} is in more than one layer"));
        }
    }
    for (module, deps) in graph {
        let Some(&mine) = layer_of.get(module.as_str()) else {
            out.push(format!("{module} is in no layer (add it to a layer)"));
            continue;
        };
        for dep in deps {
            match layer_of.get(dep.as_str()) {
                None => out.push(format!("{module} imports {dep}, which is in no layer")),
                Some(&theirs) if theirs > mine => out.push(format!(
                    "{module} ({}) imports {dep} ({}): an upward import",
                    layers[mine].0, layers[theirs].0
                )),
                Some(_) => {}
            }
        }
    }
    // A cycle, by depth-first search (0 = unseen, 1 = on the path, 2 = done).
    fn visit(
        m: &str,
        g: &Graph,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
        out: &mut Vec<String>,
    ) {
        match state.get(m).copied().unwrap_or(0) {
            1 => {
                let from = path.iter().position(|p| p == m).unwrap_or(0);
                out.push(format!(
                    "import cycle: {} -> {m}",
                    path[from..].join(" -> ")
                ));
                return;
            }
            2 => return,
            _ => {}
        }
        state.insert(m.to_owned(), 1);
        path.push(m.to_owned());
        for dep in g.get(m).into_iter().flatten() {
            visit(dep, g, state, path, out);
        }
        path.pop();
        state.insert(m.to_owned(), 2);
    }
    let mut state = BTreeMap::new();
    for module in graph.keys() {
        visit(module, graph, &mut state, &mut Vec::new(), &mut out);
    }
    out
}

/// Every violation of every section, each prefixed with its source directory.
fn check(layers_file: &Path, root: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(layers_file)
        .map_err(|e| format!("reading {}: {e}", layers_file.display()))?;
    let sections = parse(&text).map_err(|e| format!("{}: {e}", layers_file.display()))?;
    if sections.is_empty() {
        return Err(format!("{}: no sections", layers_file.display()));
    }
    let mut out = Vec::new();
    for s in &sections {
        let src = root.join(&s.name).join("src");
        let graph = imports(&src, &s.skip)?;
        if graph.is_empty() {
            return Err(format!("{}: no modules", src.display()));
        }
        let rel = Path::new(&s.name).join("src");
        out.extend(
            violations(&s.layers, &graph)
                .into_iter()
                .map(|v| format!("{}: {v}", rel.display())),
        );
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (file, root) = match args.as_slice() {
        [file] => (file.clone(), PathBuf::from(".")),
        [file, root] => (file.clone(), root.clone()),
        _ => {
            eprintln!("usage: layering LAYERS_TOML [ROOT]");
            return ExitCode::from(2);
        }
    };
    match check(&file, &root) {
        Ok(found) if found.is_empty() => {
            println!("layering: {}: every crate is a stack", file.display());
            ExitCode::SUCCESS
        }
        Ok(found) => {
            for v in &found {
                eprintln!("layering: {v}");
            }
            eprintln!("layering: {} violation(s)", found.len());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("layering: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway crate tree under the temp dir: `files` as (path under `<name>/src`, text),
    /// and `layers.toml` beside it. Removed on drop.
    struct Fixture(PathBuf);

    impl Fixture {
        fn new(tag: &str, layers: &str, files: &[(&str, &str)]) -> Fixture {
            let dir = std::env::temp_dir().join(format!("layering-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            for (path, text) in files {
                let p = dir.join("demo/src").join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            std::fs::write(dir.join("layers.toml"), layers).unwrap();
            Fixture(dir)
        }

        fn check(&self) -> Vec<String> {
            check(&self.0.join("layers.toml"), &self.0).unwrap()
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const LAYERS: &str = r#"
[[demo.layer]]
name = "low"
modules = ["a", "b"]

[[demo.layer]]
name = "high"
modules = ["c"]
"#;

    #[test]
    fn a_stack_passes() {
        let f = Fixture::new(
            "stack",
            LAYERS,
            &[
                (
                    "lib.rs",
                    "pub mod a;\npub mod b;\npub mod c;\nuse crate::c::x;\n",
                ),
                ("main.rs", "use crate::c;\n"),
                ("bin/tool.rs", "use crate::c;\n"),
                ("a.rs", "pub fn x() {}\n"),
                (
                    "b.rs",
                    "use crate::a;\n// crate::c in a comment is no import\n",
                ),
                ("c/mod.rs", "mod inner;\nuse crate::b;\n"),
                (
                    "c/inner.rs",
                    "use crate::a::x;\nuse crate::c::mod_itself;\n",
                ),
            ],
        );
        assert_eq!(f.check(), Vec::<String>::new());
    }

    #[test]
    fn an_upward_import_fails() {
        let f = Fixture::new(
            "upward",
            LAYERS,
            &[("a.rs", "use crate::c;\n"), ("c.rs", "\n")],
        );
        let v = f.check();
        assert_eq!(
            v,
            ["demo/src: a (low) imports c (high): an upward import"],
            "{v:?}"
        );
    }

    #[test]
    fn a_cycle_fails_even_inside_a_layer() {
        let f = Fixture::new(
            "cycle",
            LAYERS,
            // Inside a directory module too: b/inner.rs counts as b.
            &[
                ("a.rs", "use crate::b;\n"),
                ("b/inner.rs", "use crate::a;\n"),
            ],
        );
        let v = f.check();
        assert!(
            v.iter().any(|v| v.contains("import cycle: a -> b -> a")),
            "{v:?}"
        );
    }

    #[test]
    fn a_module_in_no_layer_fails_and_skip_skips() {
        let f = Fixture::new(
            "stray",
            LAYERS,
            &[("d.rs", "use crate::a;\n"), ("a.rs", "")],
        );
        let v = f.check();
        assert!(v.iter().any(|v| v.contains("d is in no layer")), "{v:?}");
        let skipping = format!("[demo]\nskip = [\"d\"]\n{LAYERS}");
        let f = Fixture::new(
            "skip",
            &skipping,
            &[("d.rs", "use crate::c;\n"), ("a.rs", "")],
        );
        assert_eq!(f.check(), Vec::<String>::new());
    }

    #[test]
    fn the_layers_file_parses_and_refuses_unknown_keys() {
        let s = parse(LAYERS).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].layers[1], ("high".to_owned(), vec!["c".to_owned()]));
        let twice = format!("{LAYERS}\n[[demo.layer]]\nname = \"top\"\nmodules = [\"a\"]\n");
        let v = violations(&parse(&twice).unwrap()[0].layers, &Graph::new());
        assert_eq!(v, ["a is in more than one layer"]);
        assert!(parse("[demo]\nlayers = []\n").is_err());
        assert!(parse("[demo]\nskip = []\n").is_err());
    }

    #[test]
    fn the_repository_layers_file_is_well_formed() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("layers.toml");
        let s = parse(&std::fs::read_to_string(file).unwrap()).unwrap();
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["bench", "gateway", "trainer"]);
    }
}
