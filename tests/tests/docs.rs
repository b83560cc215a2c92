//! The docs stay true where code can check it: the issue catalogue of `docs/crawler.md` is
//! generated from the code (this test fails, printing the table to paste, when the two
//! differ), `docs/site-scans.md` names the catalogue's size, the flag table of
//! `docs/configuration.md` names every flag of xf-server, the webhook receiver of
//! `docs/webhooks.md`, run as written with the stock `standardwebhooks` Python package,
//! verifies a real delivery, the commands of `docs/walk-through.md` and of every other guide
//! that shows some (api-behaviour, search-console, webhooks, media, connecting-accounts), run
//! as written against the README's quick-start server, print what the guides show, and every
//! relative link of the README and the guides leads to a file, and to a heading of it when it
//! names one.
//! (`docs/deployment.md`'s one command starts a server on a PostgreSQL role of the reader's
//! own; the README's are the quick start these tests start and `.ci/test` itself.)

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xf_tests::TestApp;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A file of the repository, by its path from the root (`docs/webhooks.md`).
fn doc(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_crawler_guide_lists_the_issue_catalogue_as_the_code_defines_it() {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/crawler.md"))
        .expect("docs/crawler.md");
    let table = xf_core::crawl::checks::catalogue_markdown();
    assert!(
        guide.contains(&table),
        "docs/crawler.md's issue catalogue differs from xf_core::crawl::checks::CATALOGUE; \
         replace the table under \"Issue catalogue\" with:\n\n{table}"
    );
    let count = xf_core::crawl::checks::CATALOGUE.len();
    assert!(
        doc("docs/site-scans.md").contains(&format!("the {count} checks of the issue catalogue")),
        "docs/site-scans.md names the number of checks: {count}"
    );
}

#[test]
fn the_configuration_guide_table_names_every_flag_and_variable_of_xf_server() {
    use clap::CommandFactory;
    let guide = doc("docs/configuration.md");
    let table_start = guide
        .find("\n## Flags and environment variables\n")
        .expect("docs/configuration.md has the section \"Flags and environment variables\"");
    let table = &guide[table_start + 1..];
    let table = &table[..table.find("\n## ").unwrap_or(table.len())];
    let command = xf_server::Config::command();
    let mut missing = Vec::new();
    for argument in command.get_arguments() {
        let Some(long) = argument.get_long() else {
            continue;
        };
        if matches!(long, "help" | "version") {
            continue;
        }
        if !table.contains(&format!("`--{long}`")) {
            missing.push(format!("--{long}"));
        }
        if let Some(variable) = argument.get_env() {
            let variable = variable.to_string_lossy();
            // Grouped rows name a family of variables as `XF_TIKTOK_*`.
            let in_family = variable
                .match_indices('_')
                .any(|(at, _)| table.contains(&format!("`{}_*`", &variable[..at])));
            let named = table.contains(&format!("`{variable}`")) || in_family;
            if !named {
                missing.push(variable.into_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md's \"Flags and environment variables\" lacks {missing:?}"
    );
}

/// The one Python block of `docs/webhooks.md`: the webhook receiver.
fn webhooks_guide_receiver() -> String {
    let guide = doc("docs/webhooks.md");
    let start = guide
        .find("```python\n")
        .expect("docs/webhooks.md shows a Python receiver")
        + "```python\n".len();
    let end = start + guide[start..].find("```").expect("the block ends");
    guide[start..end].to_owned()
}

/// The Python with `standardwebhooks`: `XF_TEST_PYTHON` (`.ci/test` makes a virtualenv with
/// it), else `python3`.
fn python() -> String {
    let python = std::env::var("XF_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let check = Command::new(&python)
        .args(["-c", "import standardwebhooks"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        check.success(),
        "{python} lacks the standardwebhooks package: run the tests with `bash .ci/test`, \
         which installs it in a virtualenv, or `pip install standardwebhooks`"
    );
    python
}

/// Runs the receiver of `docs/webhooks.md` with `secret` on a free port, registers a webhook there,
/// sends a test delivery, and returns the delivery's log row and what the receiver printed.
async fn deliver_to_the_guide_receiver(
    secret_for_receiver: Option<&str>,
) -> (serde_json::Value, String) {
    let app = TestApp::configured(Arc::new(xf_storage_memory::MemoryStore::new()), |b| {
        b.allow_private_targets(true)
    });
    app.clock
        .set(xf_core::time::Timestamp::from_datetime(chrono::Utc::now()));
    let owner = app.organization("Webhooks guide", "growth").await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let created = app
        .post(
            "/webhooks",
            &owner.live_key,
            json!({"name": "webhooks-guide", "url": format!("http://127.0.0.1:{port}/hooks")}),
        )
        .await;
    let data = created.expect(201);
    let id = data["webhook"]["id"].as_str().unwrap().to_owned();
    let secret = secret_for_receiver
        .unwrap_or_else(|| data["secret"].as_str().unwrap())
        .to_owned();

    let code = webhooks_guide_receiver();
    assert!(code.contains("\"whsec_…\"") && code.contains("9000"));
    let code = code
        .replace("\"whsec_…\"", &format!("{secret:?}"))
        .replace("9000", &port.to_string());
    let mut receiver = Command::new(python())
        .args(["-u", "-c", &code])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the receiver of docs/webhooks.md");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the receiver listens");
        std::thread::sleep(Duration::from_millis(50));
    }
    let tested = app
        .post(&format!("/webhooks/{id}/test"), &owner.live_key, json!({}))
        .await;
    let delivery = tested.expect(200)["delivery"].clone();
    let _ = receiver.kill();
    let mut printed = String::new();
    BufReader::new(receiver.stdout.take().unwrap())
        .read_line(&mut printed)
        .expect("the receiver's output");
    let _ = receiver.wait();
    (delivery, printed)
}

/// `docs/webhooks.md` shows an example body of every event, and each is exactly what xf's
/// samples make (the data of test deliveries and the OpenAPI document's examples).
#[test]
fn the_webhooks_guide_shows_every_event_s_body() {
    use xf_core::model::EventType;
    use xf_core::webhooks::samples::{sample_body, EXAMPLE_TIME};
    let guide = doc("docs/webhooks.md");
    let at = xf_core::time::Timestamp::parse_rfc3339(EXAMPLE_TIME).unwrap();
    for event in EventType::ALL {
        let summary = format!("<summary><code>{}</code></summary>", event.as_str());
        let start = guide
            .find(&summary)
            .unwrap_or_else(|| panic!("docs/webhooks.md shows no example of {}", event.as_str()));
        let block = &guide[start..];
        let block = &block[block.find("```json\n").expect("a json block") + 8..];
        let block = &block[..block.find("\n```").expect("the block ends")];
        let shown: serde_json::Value = serde_json::from_str(block)
            .unwrap_or_else(|e| panic!("the example of {} is not JSON: {e}", event.as_str()));
        let made = sample_body(event, at);
        assert_eq!(
            shown,
            made,
            "docs/webhooks.md's example of {} differs; it is:\n{}",
            event.as_str(),
            serde_json::to_string_pretty(&made).unwrap()
        );
        assert!(
            guide.contains(&format!("| `{}` |", event.as_str())),
            "the events table names {}",
            event.as_str()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_receiver_verifies_a_real_delivery() {
    let (delivery, printed) = deliver_to_the_guide_receiver(None).await;
    assert_eq!(delivery["statusCode"], 204, "the receiver verified it");
    assert!(printed.starts_with("job.completed evt_"), "{printed}");

    // With another secret, the same receiver refuses the delivery.
    let other = xf_core::webhooks::secrets::SigningSecret::generate();
    let (delivery, printed) = deliver_to_the_guide_receiver(Some(other.as_str())).await;
    assert_eq!(delivery["statusCode"], 400);
    assert_eq!(printed, "");
}

/// The anchor GitHub gives a heading: lower case, characters other than letters, digits,
/// spaces, `-` and `_` removed, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Lines of Markdown outside fenced code blocks.
fn prose_lines(markdown: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    markdown.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The anchors of a Markdown file's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    prose_lines(markdown)
        .filter_map(|line| {
            let text = line.trim_start_matches('#');
            (text.len() < line.len() && text.starts_with(' ')).then(|| slug(text))
        })
        .collect()
}

/// The targets of a Markdown file's links, `[text](target)` and `<img src="target">`, outside
/// code blocks and code spans. A link's text may run over a line end.
fn link_targets(markdown: &str) -> Vec<String> {
    let prose: Vec<&str> = prose_lines(markdown).collect();
    let prose = prose.join("\n");
    // Code spans hold no links (`[a](b)` there is an example, not a link).
    let mut text = String::with_capacity(prose.len());
    for (index, part) in prose.split('`').enumerate() {
        if index % 2 == 0 {
            text.push_str(part);
        }
    }
    let mut targets = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        if let Some(end) = after.find(')') {
            targets.push(after[..end].trim().to_owned());
        }
        rest = after;
    }
    let mut rest = text.as_str();
    while let Some(at) = rest.find("src=\"") {
        let after = &rest[at + 5..];
        if let Some(end) = after.find('"') {
            targets.push(after[..end].to_owned());
        }
        rest = after;
    }
    targets
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_resolves() {
    let mut files = vec![root().join("README.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("an entry of docs/").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    guides.sort();
    assert!(!guides.is_empty(), "docs/ holds guides");
    files.extend(guides);

    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let name = file
            .strip_prefix(root())
            .unwrap_or(file)
            .display()
            .to_string();
        let markdown = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{name}: {e}"));
        for target in link_targets(&markdown) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("a directory").join(path)
            };
            if !linked.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else {
                continue;
            };
            let is_markdown = linked
                .extension()
                .is_some_and(|extension| extension == "md");
            let headings = std::fs::read_to_string(&linked)
                .ok()
                .filter(|_| is_markdown)
                .map(|text| anchors(&text))
                .unwrap_or_default();
            if !headings.contains(anchor) {
                broken.push(format!("{name}: {target}: no heading with that anchor"));
            }
        }
    }
    assert!(checked > 0, "the README and the guides link to each other");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The `sh` blocks of a guide, each with the output block shown after it (if any).
fn guide_steps(path: &str) -> Vec<(String, Option<String>)> {
    let guide = doc(path);
    let mut steps: Vec<(String, Option<String>)> = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        let Some(kind) = line.strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let block = block.join("\n");
        match kind {
            "sh" => steps.push((block, None)),
            "json" | "text" => {
                if let Some((_, shown @ None)) = steps.last_mut() {
                    *shown = Some(block);
                }
            }
            _ => {}
        }
    }
    steps
}

/// The `"key":` names of a line of JSON, shortened or not.
fn json_keys(line: &str) -> BTreeSet<String> {
    line.split('"')
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|pair| pair[1].starts_with(':'))
        .map(|pair| pair[0].to_owned())
        .collect()
}

/// The value of `"key":"value"` in a line of JSON.
fn json_text<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    line[start..].split('"').next()
}

/// Checks what a step printed against what the guide shows: the same JSON lines, each with at
/// least the keys shown and the same `code` and `status`; the same HTTP status; the headers
/// shown.
fn compare_step(step: &str, printed: &str, shown: &str) {
    let json = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with('{'))
            .map(str::to_owned)
            .collect()
    };
    // curl prints no line end after a body: one command's JSON runs into the next one's.
    let printed = printed.replace("}{\"", "}\n{\"");
    let printed = printed.as_str();
    let (printed_json, shown_json) = (json(printed), json(shown));
    assert_eq!(
        printed_json.len(),
        shown_json.len(),
        "the step\n{step}\nprinted\n{printed}\nwhere the guide shows\n{shown}"
    );
    for (printed, shown) in printed_json.iter().zip(&shown_json) {
        let missing: Vec<_> = json_keys(shown)
            .difference(&json_keys(printed))
            .cloned()
            .collect();
        assert!(
            missing.is_empty(),
            "{step}\nprinted {printed}\nwithout {missing:?}"
        );
        for key in ["code", "status"] {
            assert_eq!(
                json_text(printed, key),
                json_text(shown, key),
                "{step}\n{printed}"
            );
        }
    }
    let status = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("HTTP/"))
            .and_then(|l| l.split(' ').nth(1))
            .map(str::to_owned)
    };
    assert_eq!(status(printed), status(shown), "{step}\n{printed}");
    let printed_lower = printed.to_ascii_lowercase();
    for header in shown
        .lines()
        .filter(|l| !l.starts_with('{') && !l.starts_with("HTTP/"))
        .filter_map(|l| {
            l.split_once(": ")
                .map(|(name, _)| name.to_ascii_lowercase())
        })
    {
        assert!(
            printed_lower.contains(&format!("{header}: ")),
            "{step}\nno {header} in\n{printed}"
        );
    }
}

/// The flags of the README's quick start.
const QUICK_START: &[&str] = &[
    "--demo",
    "--demo-live-key",
    "xf_live_demo0000000000000000000000000000000001",
    "--demo-test-key",
    "xf_test_demo0000000000000000000000000000000001",
    "--demo-media-live-key",
    "xf_live_media000000000000000000000000000000001",
    "--demo-media-test-key",
    "xf_test_media000000000000000000000000000000001",
    "--admin-token",
    "demo-admin-token",
    "--allow-private-targets",
];

/// The walk-through serves its site on `SITE_PORT=8000`: each run gets a free port instead, as
/// tests run side by side.
fn free_site_port(script: &str) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    script.replace("SITE_PORT=8000", &format!("SITE_PORT={port}"))
}

/// Runs `prelude` (its output unchecked), then `steps`, in one shell in a directory of its own
/// (so that variables carry over, and files the steps make stay there), against `server`; every
/// step must print what the guide shows after it.
async fn run_as_written(
    server: &xf_tests::server::Server,
    prelude: &str,
    steps: &[(String, Option<String>)],
) {
    let address = server.address.to_string();
    let mut script = free_site_port(&prelude.replace("127.0.0.1:8080", &address));
    for (n, (step, _)) in steps.iter().enumerate() {
        let step = free_site_port(&step.replace("127.0.0.1:8080", &address));
        script.push_str(&format!("\necho; echo '@@@ {n}'\n{step}\n"));
    }
    let directory = server.media_dir.join("guide");
    std::fs::create_dir_all(&directory).expect("a directory for the steps");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .args(["-c", &script])
            .current_dir(directory)
            .output()
            .expect("bash runs")
    })
    .await
    .expect("the script's thread");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    let mut outputs = printed.split("@@@ ").skip(1);
    for (n, (step, shown)) in steps.iter().enumerate() {
        let block = outputs.next().expect("every step ran");
        let block = block
            .strip_prefix(&format!("{n}\n"))
            .expect("steps in order");
        if let Some(shown) = shown {
            compare_step(step, block, shown);
        }
    }
}

/// The walk-through's commands, run as written (in one shell, so that variables carry over)
/// against xf-server started as the README's quick start starts it, print what the guide
/// shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walk_through_runs_as_written() {
    let server = xf_tests::server::Server::start(QUICK_START).await;
    let steps = guide_steps("docs/walk-through.md");
    assert!(steps.len() > 5, "the walk-through has its steps");
    run_as_written(&server, "", &steps).await;
}

/// The commands of every other guide that shows some, run as written after the
/// walk-through's (whose variables they use) against the quick start's server, which serves
/// every guide. Each prints what its guide shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_guide_s_commands_run_as_written() {
    let walk_through: String = guide_steps("docs/walk-through.md")
        .into_iter()
        .map(|(step, _)| format!("{step}\n"))
        .collect::<String>()
        + "echo\n";
    let guides: &[(&str, &[&str])] = &[
        ("docs/api-behaviour.md", &[]),
        ("docs/search-console.md", &[]),
        ("docs/audits-over-time.md", &[]),
        ("docs/webhooks.md", &[]),
        ("docs/media.md", &[]),
    ];
    for (guide, extra) in guides {
        let flags: Vec<&str> = QUICK_START.iter().chain(extra.iter()).copied().collect();
        let server = xf_tests::server::Server::start(&flags).await;
        let prelude = walk_through.clone();
        let steps = guide_steps(guide);
        assert!(!steps.is_empty(), "{guide} shows commands");
        run_as_written(&server, &prelude, &steps).await;
    }
}

/// The connect-link commands of `docs/connecting-accounts.md`, run as written: the guide's
/// stand-in (`xf-oauth-stand-in`, the binary its `cargo run` builds) is started as it says,
/// the quick-start server with the flags it printed (the guide's server command is the
/// README's with `$(cat stand-in.flags)` after it), and the rest of the steps against it: the
/// link is made, followed through the consent to `returnUrl`, and the channel is listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connect_link_guide_runs_as_written() {
    let guide = doc("docs/connecting-accounts.md");
    let readme = doc("README.md");
    let quick_start = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the README's quick start command");
    let restart = guide
        .split("```shell\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the guide's server command");
    assert_eq!(restart, format!("{quick_start} $(cat stand-in.flags)"));

    let steps = guide_steps("docs/connecting-accounts.md");
    assert_eq!(steps.len(), 4, "the guide's four commands");
    let invocation =
        "cargo run -q -p xf-tests --bin xf-oauth-stand-in > stand-in.flags & STAND_IN=$!";
    assert!(steps[0].0.contains(invocation), "{}", steps[0].0);
    let mut stand_in = Command::new(env!("CARGO_BIN_EXE_xf-oauth-stand-in"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the stand-in starts");
    let mut flags_line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(stand_in.stdout.take().expect("its stdout")),
        &mut flags_line,
    )
    .expect("the stand-in prints its flags");
    let mut flags: Vec<&str> = QUICK_START.to_vec();
    flags.extend(flags_line.split_whitespace());
    let server = xf_tests::server::Server::start(&flags).await;
    let prelude = format!("BASE=http://127.0.0.1:8080\nSTAND_IN={}\n", stand_in.id());
    run_as_written(&server, &prelude, &steps[1..]).await;
    let _ = stand_in.kill();
    let _ = stand_in.wait();
}
