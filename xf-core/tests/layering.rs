//! The house's shape: every module of `xf-core` sits in a layer, and no module imports from a
//! layer above its own, nor in a circle with a neighbour of its layer.
//!
//! The check reads the source: every `crate::…`, `super::…` and `self::…` path outside
//! comments and string literals (grouped `use` trees included) is an import of the module it
//! names. A new module must be given a layer in [`LAYERS`], which is where the design is
//! written down; `docs/ARCHITECTURE.md` explains it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module is placed by the longest entry that is a prefix of its
/// path (`crawl::scan` is in `crawl`); it may import from the layers listed before its own,
/// and from its own layer as long as no circle forms.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation: values and helpers that know nothing of the domain",
        &[
            "error", "ids", "time", "text", "json", "secret", "net", "plans", "hash",
        ],
    ),
    (
        "records and request values, the media and Search Console ones included",
        &["model", "params", "auth"],
    ),
    ("the storage seam", &["store"]),
    (
        "the API's shapes, cursors, exports, the job engine with its handler contract, the \
         connect flow's contract (connectors, sealed links and states), and the metrics",
        &["api", "cursor", "runtime", "connect", "export", "metrics"],
    ),
    (
        "the domains: parsing, rules, clients, and each one's job handler",
        &["crawl", "gsc", "media", "webhooks"],
    ),
    ("the facade", &["xf"]),
    ("the storage conformance suite", &["testing"]),
];

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let wrong = against_the_layers(&import_graph());
    assert!(
        wrong.is_empty(),
        "imports against the layers (see LAYERS in this file):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let cycles = strongly_connected(&import_graph());
    assert!(
        cycles.is_empty(),
        "modules that import each other in a circle: {cycles:?}"
    );
}

/// `xf-tower` has no layers of its own to check, but no circles either.
#[test]
fn xf_tower_s_modules_import_each_other_in_no_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../xf-tower/src");
    let graph = graph_of(&src, |module| {
        module.split("::").next().unwrap_or_default().to_owned()
    });
    assert!(
        graph.contains_key("routes"),
        "the graph was read: {graph:?}"
    );
    let cycles = strongly_connected(&graph);
    assert!(
        cycles.is_empty(),
        "xf-tower's modules that import each other in a circle: {cycles:?}"
    );
}

#[test]
fn the_check_finds_an_import_from_above_and_a_circle() {
    let mut graph = Graph::new();
    let mut edge = |from: &str, to: &str| {
        graph
            .entry(from.to_owned())
            .or_default()
            .entry(to.to_owned())
            .or_default()
            .insert(format!("{from}.rs"));
    };
    edge("store", "xf");
    edge("crawl", "gsc");
    edge("gsc", "crawl");
    edge("xf", "store");
    assert_eq!(
        against_the_layers(&graph),
        ["store (layer 2) imports xf (layer 5) in store.rs"]
    );
    assert_eq!(
        strongly_connected(&graph),
        [
            vec!["crawl".to_owned(), "gsc".to_owned()],
            vec!["store".to_owned(), "xf".to_owned()]
        ]
    );
}

/// Every import of a unit from a layer above its own, described.
fn against_the_layers(graph: &Graph) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, targets) in graph {
        for (to, files) in targets {
            let (from_layer, to_layer) = (layer_of(from), layer_of(to));
            if to_layer > from_layer {
                wrong.push(format!(
                    "{from} (layer {from_layer}) imports {to} (layer {to_layer}) in {}",
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    wrong
}

#[test]
fn the_check_sees_imports_in_every_form() {
    let source = r#"
        use crate::{time::Timestamp, store::{self, Store}};
        // crate::xf in a comment is no import
        let text = "crate::runtime in a string is none either";
        fn f() -> crate::Error { super::checks::run(); self::inner::go() }
        mod tests { use super::*; use super::super::html; }
    "#;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = imports_in("crawl::scan", &strip(source), &lib_reexports(&src));
    assert_eq!(
        found,
        BTreeSet::from([
            "crawl::checks::run".to_owned(),
            "crawl::html".to_owned(),
            "error".to_owned(),
            "store".to_owned(),
            "time".to_owned(),
        ])
    );
    assert_eq!(unit_of("crawl::scan::inner"), "crawl");
    assert_eq!(unit_of("crawl::checks"), "crawl");
}

/// Which unit (an entry of [`LAYERS`]) imports which, with the files that do.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn import_graph() -> Graph {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    graph_of(&src, unit_of)
}

/// The import graph of the crate whose source is `src`, between the units `unit` makes of its
/// modules. Imports of items of the crate root itself (`crate::Body` in `xf-tower`) are left
/// out: the root only declares and re-exports.
fn graph_of(src: &Path, unit: fn(&str) -> String) -> Graph {
    let reexports = lib_reexports(src);
    let modules: BTreeSet<String> = rust_files(src)
        .iter()
        .map(|file| module_path(&file.strip_prefix(src).unwrap().to_string_lossy()))
        .map(|module| module.split("::").next().unwrap_or_default().to_owned())
        .collect();
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative == "lib.rs" {
            continue;
        }
        let module = module_path(&relative);
        let from = unit(&module);
        let source = std::fs::read_to_string(&file).unwrap();
        for target in imports_in(&module, &strip(&source), &reexports) {
            if !modules.contains(target.split("::").next().unwrap_or_default()) {
                continue;
            }
            let to = unit(&target);
            if to != from {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(relative.clone());
            }
        }
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// `crawl/scan.rs` → `crawl::scan`, `crawl/mod.rs` → `crawl`.
fn module_path(relative: &str) -> String {
    let trimmed = relative.trim_end_matches(".rs").trim_end_matches("/mod");
    trimmed.replace('/', "::")
}

/// The entry of [`LAYERS`] a module belongs to: the longest one that is a prefix of it.
fn unit_of(module: &str) -> String {
    LAYERS
        .iter()
        .flat_map(|(_, units)| units.iter())
        .filter(|unit| module == **unit || module.starts_with(&format!("{unit}::")))
        .max_by_key(|unit| unit.len())
        .unwrap_or_else(|| panic!("the module {module} has no layer: add it to LAYERS"))
        .to_string()
}

fn layer_of(unit: &str) -> usize {
    LAYERS
        .iter()
        .position(|(_, units)| units.contains(&unit))
        .unwrap_or_else(|| panic!("{unit} is in no layer"))
}

/// The names `lib.rs` re-exports at the crate root, with the module they come from; a glob
/// re-export (`pub use xf::*`) takes every other capitalised name.
fn lib_reexports(src: &Path) -> (BTreeMap<String, String>, Option<String>) {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let (mut names, mut glob) = (BTreeMap::new(), None);
    for line in lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub use "))
    {
        let line = line.trim_end_matches(';');
        let (module, rest) = line.split_once("::").unwrap();
        match rest.trim_start_matches('{').trim_end_matches('}') {
            "*" => glob = Some(module.to_owned()),
            list => {
                for name in list.split(',') {
                    names.insert(name.trim().to_owned(), module.to_owned());
                }
            }
        }
    }
    (names, glob)
}

/// The source without comments and without the contents of string and char literals.
fn strip(source: &str) -> String {
    let bytes = source.as_bytes();
    let at = |i: usize, text: &[u8]| bytes[i..].starts_with(text);
    let find = |from: usize, text: &[u8]| {
        bytes[from..]
            .windows(text.len())
            .position(|w| w == text)
            .map_or(bytes.len(), |p| from + p)
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if at(i, b"//") {
            i = find(i, b"\n");
        } else if at(i, b"/*") {
            i = (find(i, b"*/") + 2).min(bytes.len());
        } else if let Some(length) = raw_string_length(&bytes[i..]) {
            out.extend_from_slice(b"\"\"");
            i += length;
        } else if bytes[i] == b'"' {
            out.extend_from_slice(b"\"\"");
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if let Some(length) = char_literal_length(&bytes[i..]) {
            // A char literal such as '"' must not open a string.
            out.extend_from_slice(b"' '");
            i += length;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`) starting here, if one does.
fn raw_string_length(rest: &[u8]) -> Option<usize> {
    let after_r = rest.strip_prefix(b"r")?;
    let hashes = after_r.iter().take_while(|b| **b == b'#').count();
    let body = after_r[hashes..].strip_prefix(b"\"")?;
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let end = body.windows(close.len()).position(|w| w == close)?;
    Some(1 + hashes + 1 + end + close.len())
}

/// The length of a char literal (`'a'`, `'\n'`, `'"'`, `'…'`) starting here; `None` for a
/// lifetime.
fn char_literal_length(rest: &[u8]) -> Option<usize> {
    if rest.first() != Some(&b'\'') {
        return None;
    }
    if rest.get(1) == Some(&b'\\') {
        return rest[3..].iter().position(|b| *b == b'\'').map(|p| p + 4);
    }
    // One character of up to four bytes, then the closing quote.
    (2..=5)
        .find(|&end| {
            rest.get(end) == Some(&b'\'')
                && std::str::from_utf8(&rest[1..end]).is_ok_and(|c| c.chars().count() == 1)
        })
        .map(|end| end + 1)
}

/// The modules a (stripped) source file of `module` imports.
fn imports_in(
    module: &str,
    source: &str,
    (names, glob): &(BTreeMap<String, String>, Option<String>),
) -> BTreeSet<String> {
    let inline = inline_modules(module, source);
    let mut found = BTreeSet::new();
    for prefix in ["crate::", "super::", "self::"] {
        for (at, _) in source.match_indices(prefix) {
            let preceded = source[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '$'));
            // `$crate::` is a macro's path, read where the macro is used.
            if preceded {
                continue;
            }
            // The module this text is in: the innermost inline `mod` around it, or the file's.
            let here = inline
                .iter()
                .rfind(|(start, end, _)| (*start..*end).contains(&at))
                .map_or(module, |(_, _, path)| path.as_str());
            let base = match prefix {
                "crate::" => None,
                "super::" => Some(here.rsplit_once("::").map_or("", |(parent, _)| parent)),
                _ => Some(here),
            };
            for path in path_heads(&source[at + prefix.len()..]) {
                let resolved = match base {
                    None => match path.first() {
                        Some(first) if first.starts_with(char::is_uppercase) => names
                            .get(first)
                            .or(glob.as_ref())
                            .cloned()
                            // An item of the crate root itself.
                            .unwrap_or_default(),
                        _ => path.join("::"),
                    },
                    Some(base) => {
                        let mut parts: Vec<&str> = base.split("::").collect();
                        for segment in &path {
                            if segment == "super" {
                                parts.pop();
                            } else {
                                parts.push(segment);
                            }
                        }
                        parts.retain(|s| !s.is_empty());
                        parts.join("::")
                    }
                };
                if !resolved.is_empty() && !resolved.starts_with(char::is_uppercase) {
                    found.insert(resolved);
                }
            }
        }
    }
    found.retain(|target| target != module && !target.starts_with(&format!("{module}::")));
    found
}

/// The inline modules (`mod tests { … }`) of a stripped source: where each starts and ends, and
/// its path. An enclosing module comes before the ones inside it.
fn inline_modules(module: &str, source: &str) -> Vec<(usize, usize, String)> {
    let mut spans: Vec<(usize, usize, String)> = Vec::new();
    for (at, _) in source.match_indices("mod ") {
        if source[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &source[at + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = source.len() - after.len();
        let mut depth = 0usize;
        let close = source[open..]
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(source.len(), |(i, _)| open + i);
        let outer = spans
            .iter()
            .rfind(|(start, end, _)| (*start..*end).contains(&at))
            .map_or(module, |(_, _, path)| path.as_str());
        let path = format!("{outer}::{name}");
        spans.push((open, close, path));
    }
    spans
}

/// The module paths a path or `use` tree starts with, up to two lowercase segments each:
/// `time::Timestamp` → `[time]`, `{a::b::C, d}` → `[a::b, d]`.
fn path_heads(rest: &str) -> Vec<Vec<String>> {
    if let Some(tree) = rest.strip_prefix('{') {
        let mut heads = Vec::new();
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in tree.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    heads.extend(tree_item(&tree[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    heads.extend(tree_item(&tree[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        heads
    } else {
        vec![segments(rest)]
    }
}

fn tree_item(item: &str) -> Option<Vec<String>> {
    let item = item.trim();
    (!item.is_empty() && !item.starts_with("self")).then(|| segments(item))
}

/// The leading module segments of a path: lowercase identifiers joined by `::`, at most two,
/// or the one capitalised name it starts with.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in path.split("::") {
        let name: String = segment
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        if segment[name.len()..].starts_with('!') {
            // A macro exported at the crate root: no module.
            return Vec::new();
        }
        let capitalised = name.starts_with(char::is_uppercase);
        if capitalised && !out.is_empty() {
            break;
        }
        out.push(name.clone());
        if capitalised || out.len() == 2 || name.len() != segment.trim_end().len() {
            break;
        }
    }
    out
}

/// The strongly connected components of more than one unit (Tarjan's algorithm).
fn strongly_connected(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, node: &'a str) {
        let n = s.index.len();
        s.index.insert(node, n);
        s.low.insert(node, n);
        s.stack.push(node);
        if let Some(targets) = s.graph.get(node) {
            for next in targets.keys() {
                if !s.index.contains_key(next.as_str()) {
                    visit(s, next);
                    let low = s.low[node].min(s.low[next.as_str()]);
                    s.low.insert(node, low);
                } else if s.stack.contains(&next.as_str()) {
                    let low = s.low[node].min(s.index[next.as_str()]);
                    s.low.insert(node, low);
                }
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                component.push(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}

/// xf-core knows nothing of HTTP: none of its dependencies is an HTTP server's or a router's
/// (reqwest, the client its crawler and platform clients use, is not one), and its error type
/// has no variant for a rule of HTTP or of tus (a method not allowed, a protocol version, a
/// content type): those are xf-tower's `Refusal`s.
#[test]
fn xf_core_has_no_http_or_tus_concepts() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let dependencies = manifest
        .split("\n[")
        .filter(|section| section.contains("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .filter_map(|line| line.split(['.', ' ', '=']).next())
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect::<BTreeSet<_>>();
    assert!(dependencies.contains("reqwest"), "read: {dependencies:?}");
    for edge in [
        "axum",
        "http",
        "http-body",
        "hyper",
        "tower",
        "tower-http",
        "warp",
    ] {
        assert!(!dependencies.contains(edge), "xf-core depends on {edge}");
    }

    let error = std::fs::read_to_string(root.join("src/error.rs")).expect("src/error.rs");
    let body = error
        .split_once("pub enum Error {")
        .and_then(|(_, rest)| rest.split_once("\n}\n"))
        .map(|(body, _)| body)
        .expect("the Error enum");
    let variants: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter_map(|line| line.split(['(', ' ', '{', ',']).next())
        .collect();
    assert!(variants.contains(&"Validation"), "read: {variants:?}");
    for variant in &variants {
        for word in ["Method", "Tus", "MediaType", "Header", "Status", "Http"] {
            assert!(
                !variant.contains(word),
                "xf_core::Error::{variant} is a rule of HTTP or tus: it belongs to xf-tower"
            );
        }
    }
}

/// The facade takes typed requests: no method of `Xf` (every `pub fn` of `src/xf/`) takes a
/// raw JSON value or a form's name–value pairs. Reading what a client sent is the edge's
/// work (xf-tower parses with the readers of `params` and `media::settings`).
#[test]
fn no_facade_method_takes_raw_json_or_form_pairs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/xf");
    let mut methods = 0;
    let mut raw = Vec::new();
    for file in rust_files(&root) {
        let source = std::fs::read_to_string(&file).expect("source");
        for (at, _) in source.match_indices("pub ") {
            let rest = &source[at..];
            let Some(signature) = rest
                .strip_prefix("pub async fn ")
                .or_else(|| rest.strip_prefix("pub fn "))
            else {
                continue;
            };
            let Some(parameters) = parameters_of(signature) else {
                continue;
            };
            methods += 1;
            let name = signature.split(['(', '<']).next().unwrap_or_default();
            for forbidden in ["Value", "serde_json", "(String, String)", "(&str, &str)"] {
                if parameters.contains(forbidden) {
                    raw.push(format!("{}: {name} takes {forbidden}", file.display()));
                }
            }
        }
    }
    assert!(methods > 100, "the facade's methods were read: {methods}");
    assert!(
        raw.is_empty(),
        "facade methods taking raw input:\n{}",
        raw.join("\n")
    );
}

/// The text between a signature's first `(` and its matching `)`.
fn parameters_of(signature: &str) -> Option<&str> {
    let open = signature.find('(')?;
    let mut depth = 0usize;
    for (i, c) in signature[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&signature[open + 1..open + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// No function of the library crates or the examples (their tests and the conformance suite
/// of `src/testing/` aside) is over 100 lines, unless its documentation says why it is one
/// piece, in a paragraph that starts "One piece:".
#[test]
fn long_functions_say_why_they_are_one_piece() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut roots: Vec<PathBuf> = [
        "xf-core",
        "xf-tower",
        "xf-storage-memory",
        "xf-storage-postgres",
    ]
    .iter()
    .map(|krate| workspace.join(krate).join("src"))
    .collect();
    for example in std::fs::read_dir(workspace.join("examples")).expect("examples/") {
        roots.push(example.expect("an example").path().join("src"));
    }
    let mut read = 0;
    let mut explained = 0;
    let mut unexplained = Vec::new();
    for file in roots.iter().flat_map(|root| rust_files(root)) {
        if file.components().any(|part| part.as_os_str() == "testing") {
            continue;
        }
        let source = std::fs::read_to_string(&file).expect("source");
        read += 1;
        for (name, lines, doc) in long_functions(&source, 100) {
            if doc.contains("One piece:") {
                explained += 1;
            } else {
                unexplained.push(format!("{}: {name} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(read > 100, "the sources were read: {read} files");
    assert!(explained > 0, "the long functions were found");
    assert!(
        unexplained.is_empty(),
        "functions over 100 lines that do not say why they are one piece:\n{}",
        unexplained.join("\n")
    );
}

/// The functions of `source` (before its `#[cfg(test)]` module) longer than `limit` lines:
/// each one's name, length and documentation. rustfmt's layout is assumed: a body ends at
/// the first `}` line indented as its signature.
fn long_functions(source: &str, limit: usize) -> Vec<(String, usize, String)> {
    let lines: Vec<&str> = source.lines().collect();
    let end = lines
        .iter()
        .position(|line| line.trim() == "#[cfg(test)]")
        .unwrap_or(lines.len());
    let mut found = Vec::new();
    let mut i = 0;
    while i < end {
        let line = lines[i];
        let trimmed = line.trim_start();
        let signature = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|visibility| trimmed.strip_prefix(visibility))
            .unwrap_or(trimmed);
        let signature = signature.strip_prefix("async ").unwrap_or(signature);
        let Some(named) = signature.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = named
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = line.len() - trimmed.len();
        let Some(open) = (i..lines.len()).find(|&j| {
            let text = lines[j].trim_end();
            text.ends_with('{') || text.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].len() == indent + 1 && lines[j].ends_with('}'))
            .unwrap_or(lines.len() - 1);
        let length = close - i + 1;
        if length > limit {
            let doc: Vec<&str> = lines[..i]
                .iter()
                .rev()
                .map(|line| line.trim())
                .take_while(|line| line.starts_with("///") || line.starts_with("#["))
                .collect();
            found.push((name, length, doc.join("\n")));
        }
        i = close + 1;
    }
    found
}
