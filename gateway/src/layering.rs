//! The layering of `gateway/src`, checked (`cargo test -p gateway --lib layering`, in the lint
//! tier): every top-level module sits in one layer and imports (`crate::x`) only modules of
//! its own layer or below, with no cycle inside a layer. So the tree reads bottom-up, and
//! rustc's module graph stays a stack. A new module is placed in `LAYERS` or the test fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &[
            "body",
            "buffer",
            "dialect",
            "error",
            "headers",
            "metrics",
            "sse",
            "upstream_url",
            "usage",
        ],
    ),
    ("config", &["config"]),
    ("codecs", &["translate"]),
    (
        "compiled state",
        &["access_log", "auth", "client", "conn", "ratelimit", "state"],
    ),
    ("request path", &["proxy", "routes", "settle"]),
    ("process", &["cli", "entry", "server"]),
];

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The `crate::x` imports of every top-level module (a directory counts as one module).
/// Line comments are skipped: doc comments may name any module.
fn imports(src: &Path) -> Graph {
    let mut graph = Graph::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read gateway/src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let top = rel.components().next().expect("a component");
            let module = top.as_os_str().to_str().expect("utf-8 name");
            let module = module.strip_suffix(".rs").unwrap_or(module);
            if matches!(module, "lib" | "main" | "layering") {
                continue;
            }
            let deps = graph.entry(module.to_owned()).or_default();
            let text = std::fs::read_to_string(&path).expect("read a source file");
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
    graph
}

/// Every violation: a module outside `LAYERS`, an import of a higher layer, a cycle.
fn violations(graph: &Graph) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (*m, i)))
        .collect();
    let mut out = Vec::new();
    for (module, deps) in graph {
        let Some(&mine) = layer_of.get(module.as_str()) else {
            out.push(format!("{module} is in no layer (add it to LAYERS)"));
            continue;
        };
        for dep in deps {
            match layer_of.get(dep.as_str()) {
                None => out.push(format!("{module} imports {dep}, which is in no layer")),
                Some(&theirs) if theirs > mine => out.push(format!(
                    "{module} ({}) imports {dep} ({}): an upward import",
                    LAYERS[mine].0, LAYERS[theirs].0
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

#[test]
fn gateway_src_is_a_stack() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    assert!(
        graph.contains_key("proxy") && graph["proxy"].contains("state"),
        "{graph:?}"
    );
    let found = violations(&graph);
    assert!(
        found.is_empty(),
        "gateway/src is not a stack:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_fails_on_an_upward_import_and_a_cycle() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let up = violations(&graph(&[("config", "state")]));
    assert!(up.iter().any(|v| v.contains("upward import")), "{up:?}");
    let cycle = violations(&graph(&[("auth", "state"), ("state", "auth")]));
    assert!(
        cycle.iter().any(|v| v.contains("import cycle")),
        "{cycle:?}"
    );
    let stray = violations(&graph(&[("newthing", "body")]));
    assert!(stray.iter().any(|v| v.contains("in no layer")), "{stray:?}");
    assert!(violations(&graph(&[("proxy", "state"), ("state", "config")])).is_empty());
}
