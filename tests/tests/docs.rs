//! The docs stay true where code can check it: the issue catalogue of `docs/crawler.md` is
//! generated from the code (this test fails, printing the table to paste, when the two
//! differ), the README's configuration table names every flag of xf-server, and the
//! README's webhook receiver, run as written with the stock
//! `standardwebhooks` Python package, verifies a real delivery.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use xf_tests::TestApp;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md")
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
        readme().contains(&format!("the {count} checks of the issue catalogue")),
        "README.md's \"Site scans\" names the number of checks: {count}"
    );
}

#[test]
fn the_readme_configuration_table_names_every_flag_and_variable_of_xf_server() {
    use clap::CommandFactory;
    let readme = readme();
    let table_start = readme
        .find("## Configuration of xf-server")
        .expect("the configuration section");
    let table = &readme[table_start..];
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
        "README.md's \"Configuration of xf-server\" lacks {missing:?}"
    );
}

/// The one Python block of the README: the webhook receiver.
fn readme_receiver() -> String {
    let readme = readme();
    let start = readme
        .find("```python\n")
        .expect("the README shows a Python receiver")
        + "```python\n".len();
    let end = start + readme[start..].find("```").expect("the block ends");
    readme[start..end].to_owned()
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

/// Runs the README's receiver with `secret` on a free port, registers a webhook there,
/// sends a test delivery, and returns the delivery's log row and what the receiver printed.
async fn deliver_to_the_readme_receiver(
    secret_for_receiver: Option<&str>,
) -> (serde_json::Value, String) {
    let app = TestApp::configured(Arc::new(xf_storage_memory::MemoryStore::new()), |b| {
        b.allow_private_targets(true)
    });
    app.clock
        .set(xf_core::time::Timestamp::from_datetime(chrono::Utc::now()));
    let owner = app.organization("Readme", "growth").await;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let created = app
        .post(
            "/webhooks",
            &owner.live_key,
            json!({"name": "readme", "url": format!("http://127.0.0.1:{port}/hooks")}),
        )
        .await;
    let data = created.expect(201);
    let id = data["webhook"]["id"].as_str().unwrap().to_owned();
    let secret = secret_for_receiver
        .unwrap_or_else(|| data["secret"].as_str().unwrap())
        .to_owned();

    let code = readme_receiver();
    assert!(code.contains("\"whsec_…\"") && code.contains("9000"));
    let code = code
        .replace("\"whsec_…\"", &format!("{secret:?}"))
        .replace("9000", &port.to_string());
    let mut receiver = Command::new(python())
        .args(["-u", "-c", &code])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the README's receiver");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_receiver_verifies_a_real_delivery() {
    let (delivery, printed) = deliver_to_the_readme_receiver(None).await;
    assert_eq!(delivery["statusCode"], 204, "the receiver verified it");
    assert!(printed.starts_with("job.completed job_"), "{printed}");

    // With another secret, the same receiver refuses the delivery.
    let other = xf_core::webhooks::secrets::SigningSecret::generate();
    let (delivery, printed) = deliver_to_the_readme_receiver(Some(other.as_str())).await;
    assert_eq!(delivery["statusCode"], 400);
    assert_eq!(printed, "");
}
