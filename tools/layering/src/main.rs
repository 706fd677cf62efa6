//! `layering LAYERS_TOML [ROOT]`: checks that the modules of each crate named in LAYERS_TOML
//! (`[gateway]` for `ROOT/gateway/src`, ...) form a stack, and likewise the child modules of
//! each directory module given its own section (`[gateway.translate]` for
//! `ROOT/gateway/src/translate`). Every module of a section sits in one layer and imports
//! only modules of its own layer or below, with no import cycle. An import is a path
//! (`crate::x`, `super::x`, `self::x`, or a `{...}` list after one) resolved from the file's
//! place: a directory counts as one module; `lib.rs`, `main.rs` and `bin/` are the crate's
//! entry points, a directory section's `mod.rs` is that module's, and nothing below may
//! import an entry point (`super::Item` of an item of `mod.rs` is such a back-arrow).
//! Comments and string literals are not read. Exits 1 naming every violation (a module in no
//! layer, an upward import, a cycle, a back-arrow), 2 on a usage or read error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A module and the modules it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The node standing for a directory section's `mod.rs` in its graph.
const ROOT: &str = "mod.rs";

/// One stack: a crate's (`module` empty) or a directory module's, its layers bottom to top,
/// and files that are not part of it.
#[derive(Debug, Clone, PartialEq)]
struct Section {
    /// The crate.
    name: String,
    /// The directory module's path below the crate's `src` (empty: the crate's top level).
    module: Vec<String>,
    /// (layer name, modules), bottom to top.
    layers: Vec<(String, Vec<String>)>,
    skip: Vec<String>,
    /// Whether `#[cfg(test)]` inline modules are left out: a unit test may reach above the
    /// module it tests (its dispatcher), as the crate's test-only layers do.
    tests_above: bool,
}

impl Section {
    /// `gateway` or `gateway.translate`, as the layers file names it.
    fn title(&self) -> String {
        std::iter::once(&self.name)
            .chain(&self.module)
            .cloned()
            .collect::<Vec<_>>()
            .join(".")
    }
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

/// The sections of a layers file, in name order (a crate before its directory modules).
fn parse(text: &str) -> Result<Vec<Section>, String> {
    let root: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, v) in &root {
        section(name, &[], v, &mut out)?;
    }
    Ok(out)
}

/// The section `name`.`module` and those of its directory modules (sub-tables) into `out`.
fn section(
    name: &str,
    module: &[String],
    v: &toml::Value,
    out: &mut Vec<Section>,
) -> Result<(), String> {
    let title = std::iter::once(name.to_owned())
        .chain(module.iter().cloned())
        .collect::<Vec<_>>()
        .join(".");
    let t = v
        .as_table()
        .ok_or_else(|| format!("[{title}]: expected a table"))?;
    let mut layers = Vec::new();
    for (i, l) in t
        .get("layer")
        .and_then(|l| l.as_array())
        .ok_or_else(|| format!("[{title}]: no [[{title}.layer]]"))?
        .iter()
        .enumerate()
    {
        let what = format!("[[{title}.layer]] {}", i + 1);
        let l = l.as_table().ok_or_else(|| format!("{what}: a table"))?;
        let layer = l
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("{what}: no name"))?;
        layers.push((layer.to_owned(), strings(l.get("modules"), &what)?));
    }
    let tests_above = match t.get("tests_above") {
        None => false,
        Some(b) => b
            .as_bool()
            .ok_or_else(|| format!("[{title}] tests_above: expected true or false"))?,
    };
    out.push(Section {
        name: name.to_owned(),
        module: module.to_vec(),
        layers,
        skip: strings(t.get("skip"), &format!("[{title}] skip"))?,
        tests_above,
    });
    for (key, v) in t {
        if matches!(key.as_str(), "layer" | "skip" | "tests_above") {
            continue;
        }
        // A sub-table is a directory module's own stack; anything else is a typo.
        if !v.as_table().is_some_and(|t| t.contains_key("layer")) {
            return Err(format!(
                "[{title}]: unknown key {key:?} (layer, skip, tests_above, or a directory module's [[{title}.{key}.layer]])"
            ));
        }
        let mut sub = module.to_vec();
        sub.push(key.clone());
        section(name, &sub, v, out)?;
    }
    Ok(())
}

/// `text` with comments, string and character literals blanked (newlines kept), so that
/// neither a doc comment naming a module nor a JSON brace in a string is read as code.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && matches!(at(i + 2), '"' | '#')))
            && !(i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // A raw string: r"..." or r#"..."#, closed by as many hashes.
            let mut hashes = 0;
            i += 1;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                blank(&mut out, at(i));
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{7b}'), else a lifetime or a label.
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The paths a use tree at the start of `s` names (`a::b`, `a::{b::c, d}`), each as its
/// segments, and how many bytes it spans. `self` in a list names the list's prefix.
fn tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let mut i = 0;
    loop {
        let rest = &s[i..];
        if let Some(list) = rest.strip_prefix('{') {
            let mut out = Vec::new();
            let mut k = 1;
            let mut list = list;
            loop {
                let trimmed = list.trim_start();
                k += list.len() - trimmed.len();
                list = trimmed;
                if list.is_empty() || list.starts_with('}') {
                    k += usize::from(!list.is_empty());
                    break;
                }
                let (items, len) = tree(list);
                for item in items {
                    let mut p = prefix.clone();
                    p.extend(item.into_iter().filter(|x| x != "self"));
                    out.push(p);
                }
                // Past the item's rest (`as x`) to its comma or the list's end.
                let after = &list[len..];
                let end = after.find([',', '}']).unwrap_or(after.len());
                let comma = usize::from(after[end..].starts_with(','));
                k += len + end + comma;
                list = &after[end + comma..];
            }
            return (out, i + k);
        }
        let name = ident(rest);
        if name.is_empty() {
            return (
                vec![prefix].into_iter().filter(|p| !p.is_empty()).collect(),
                i,
            );
        }
        prefix.push(name.to_owned());
        i += name.len();
        match s[i..].strip_prefix("::") {
            Some(_) => i += 2,
            None => return (vec![prefix], i),
        }
    }
}

/// The paths one file names, each as its segments from the crate root: `crate::a::b`,
/// `super::x` and `self::x` resolved from `here` (the file's module path) and the inline
/// modules around them, one path per item of a `{...}` list. With `tests_above`, nothing
/// inside a `#[cfg(test)]` inline module.
fn paths(code: &str, here: &[String], tests_above: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // Inline modules: (name, brace depth inside, a test module).
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut depth = 0usize;
    let b = code.as_bytes();
    let word_start = |i: usize| {
        i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':')
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                if inline.last().is_some_and(|m| m.1 == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let rest = &code[i..];
        if word_start(i) && rest.starts_with("mod ") {
            let name = ident(rest[4..].trim_start());
            let after = rest[4..].trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                // `#[cfg(test)]` among the attributes since the previous item.
                let before = &code[..i];
                let item = before
                    .rfind([';', '{', '}'])
                    .map_or(before, |k| &before[k + 1..]);
                let test = item.contains("cfg(test)");
                inline.push((name.to_owned(), depth + 1, test));
            }
        }
        let anchor = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|a| rest.starts_with(a));
        if let (Some(_), true) = (anchor, word_start(i)) {
            let in_test = inline.iter().any(|m| m.2);
            let mut module: Vec<String> = here.to_vec();
            module.extend(inline.iter().map(|m| m.0.clone()));
            let mut base: Vec<String> = Vec::new();
            let mut j = i;
            loop {
                let seg = &code[j..];
                if let Some(r) = seg.strip_prefix("crate::") {
                    base.clear();
                    module.clear();
                    j = code.len() - r.len();
                } else if let Some(r) = seg.strip_prefix("super::") {
                    module.pop();
                    j = code.len() - r.len();
                } else if let Some(r) = seg.strip_prefix("self::") {
                    j = code.len() - r.len();
                } else {
                    break;
                }
            }
            base.extend(module);
            let (found, len) = tree(&code[j..]);
            j += len;
            if !(tests_above && in_test) {
                for tail in found {
                    let mut p = base.clone();
                    p.extend(tail);
                    out.push(p);
                }
            }
            i = j.max(i + 1);
            continue;
        }
        i += 1;
    }
    out
}

/// The imports of every module of `section` under `src` (the crate's `src`). A module is a
/// file or directory directly in the section's directory; a path it names that leads into
/// another is an import of that one, and one that leads to an item of the section's root
/// file (`mod.rs`; never at a crate's top level) an import of `mod.rs::item`.
fn imports(src: &Path, section: &Section) -> Result<Graph, String> {
    let dir = section
        .module
        .iter()
        .fold(src.to_path_buf(), |d, m| d.join(m));
    let top = section.module.is_empty();
    // The section's child modules, by file and directory name.
    let mut children = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            children.insert(name.into_owned());
        } else if let Some(stem) = name.strip_suffix(".rs") {
            children.insert(stem.to_owned());
        }
    }
    let mut graph = Graph::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("reading {}: {e}", d.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(&dir).expect("under the section");
            let first = rel.components().next().expect("a component");
            let first = first.as_os_str().to_string_lossy();
            let module = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
            // Entry points (binaries, the crate roots, a directory module's root file) sit
            // above every module of their stack.
            let entry_point = if top {
                matches!(module.as_str(), "lib" | "main" | "bin")
            } else {
                module == "mod"
            };
            if entry_point || section.skip.contains(&module) {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            // The file's module path from the crate root.
            let mut here = section.module.clone();
            let rel_parts: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            here.extend(rel_parts);
            if here.last().is_some_and(|l| l == "mod") {
                here.pop();
            }
            let deps = graph.entry(module.clone()).or_default();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            for p in paths(&code_only(&text), &here, section.tests_above) {
                let Some(rest) = p.strip_prefix(section.module.as_slice()) else {
                    continue;
                };
                let Some(name) = rest.first() else { continue };
                if *name == module {
                    continue;
                }
                if top || children.contains(name) {
                    deps.insert(name.clone());
                } else {
                    deps.insert(format!("{ROOT}::{name}"));
                }
            }
        }
    }
    Ok(graph)
}

/// Every violation: a module in no layer (or in two), an import of a higher layer or of
/// the section's root file, a cycle.
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
                None if dep.starts_with(ROOT) => out.push(format!(
                    "{module} imports {dep}, an item of the entry point above the stack: a back-arrow (move it to a module of a layer)"
                )),
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
        let graph = imports(&src, s)?;
        if graph.is_empty() {
            return Err(format!(
                "[{}]: no modules under {}",
                s.title(),
                src.display()
            ));
        }
        let rel = s
            .module
            .iter()
            .fold(Path::new(&s.name).join("src"), |d, m| d.join(m));
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

    const NESTED: &str = r#"
[[demo.layer]]
name = "all"
modules = ["a", "codec"]

[demo.codec]
tests_above = true

[[demo.codec.layer]]
name = "leaves"
modules = ["error", "hub"]

[[demo.codec.layer]]
name = "codecs"
modules = ["chat", "stream"]
"#;

    #[test]
    fn inside_a_directory_module_a_back_arrow_fails() {
        let stack: &[(&str, &str)] = &[
            ("a.rs", ""),
            (
                "codec/mod.rs",
                "mod chat;\npub struct Target;\nuse self::chat::x;\n",
            ),
            ("codec/error.rs", "pub struct Error;\n"),
            ("codec/hub.rs", "use super::error::Error;\n"),
            (
                "codec/chat.rs",
                "use super::{error::Error, hub};\nuse crate::a;\n\
                 // super::Target in a comment is no import\n\
                 const S: &str = \"super::Target\";\n\
                 #[cfg(test)]\nmod tests {\n    use super::super::Target;\n    \
                 fn f() { let _ = '{'; }\n}\n",
            ),
            (
                "codec/stream/decode.rs",
                "use super::super::hub;\nuse super::Local;\nuse crate::codec::chat;\n",
            ),
        ];
        let f = Fixture::new("nested-ok", NESTED, stack);
        assert_eq!(f.check(), Vec::<String>::new());
        // The codec's items reached from below its root file, two ways; and a leaf up to a
        // codec (a cycle too).
        let mut files = stack.to_vec();
        files[2] = ("codec/error.rs", "use super::chat;\n");
        files[3] = ("codec/hub.rs", "use super::{error::Error, Target};\n");
        files[5] = (
            "codec/stream/decode.rs",
            "use crate::codec::Target;\nfn f() { super::super::hub::g(); }\n",
        );
        let f = Fixture::new("nested-back", NESTED, &files);
        let short = |v: Vec<String>| -> Vec<String> {
            v.iter()
                .map(|v| v.split(", an item").next().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            short(f.check()),
            [
                "demo/src/codec: error (leaves) imports chat (codecs): an upward import",
                "demo/src/codec: hub imports mod.rs::Target",
                "demo/src/codec: stream imports mod.rs::Target",
                "demo/src/codec: import cycle: chat -> error -> chat",
            ]
        );
        // Tests count where the section does not put them above.
        let strict = NESTED.replace("tests_above = true", "tests_above = false");
        let f = Fixture::new("nested-tests", &strict, stack);
        assert_eq!(
            short(f.check()),
            ["demo/src/codec: chat imports mod.rs::Target"]
        );
        assert!(parse(&NESTED.replace("tests_above = true", "tests_abov = 1")).is_err());
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
        let names: Vec<String> = s.iter().map(Section::title).collect();
        assert_eq!(
            names,
            [
                "bench",
                "gateway",
                "gateway.proxy",
                "gateway.translate",
                "trainer"
            ]
        );
    }
}
