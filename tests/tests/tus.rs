//! Resumable uploads over real HTTP to xf-server: the stock tus client `tuspy` uploads a video
//! in chunks, is interrupted half-way, resumes from the server's offset in a new client, and
//! the finished upload becomes a media item through `fileId`; and the curl steps of
//! `docs/media.md` do the same by hand.

use std::process::Command;

use serde_json::Value;
use xf_tests::server::Server;

const ADMIN_TOKEN: &str = "tus-test-admin-token";

/// The Python with `tuspy`: `XF_TEST_PYTHON` (`.ci/test` makes a virtualenv with it), else
/// `python3`.
fn python() -> String {
    let python = std::env::var("XF_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let check = Command::new(&python)
        .args(["-c", "import tusclient"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        check.success(),
        "{python} lacks the tuspy package: run the tests with `bash .ci/test`, which installs \
         it in a virtualenv, or `pip install tuspy`"
    );
    python
}

/// xf-server with the admin API, a `pro` organization with a TikTok channel, and that
/// organization's live key.
struct TusServer {
    server: Server,
    key: String,
}

impl std::ops::Deref for TusServer {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.server
    }
}

async fn server() -> TusServer {
    let server = Server::start(&["--admin-token", ADMIN_TOKEN]).await;
    let address = server.address;
    let created = curl(&[
        "-X",
        "POST",
        &format!("http://{address}/admin/organizations"),
        "-H",
        &format!("Authorization: Bearer {ADMIN_TOKEN}"),
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"name": "Studio", "plan": "pro"}"#,
    ]);
    let key = created["data"]["liveKey"]
        .as_str()
        .expect("a live key")
        .to_owned();
    let org = created["data"]["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    curl(&[
        "-X",
        "POST",
        &format!("http://{address}/admin/organizations/{org}/channels"),
        "-H",
        &format!("Authorization: Bearer {ADMIN_TOKEN}"),
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"platform": "tiktok", "accountId": "tt-1", "displayName": "Studio", "accessToken": "t"}"#,
    ]);
    TusServer { server, key }
}

/// Runs curl (silently, failing on no answer) and parses its JSON output.
fn curl(args: &[&str]) -> Value {
    let output = Command::new("curl")
        .arg("-sS")
        .args(args)
        .output()
        .expect("curl runs");
    assert!(
        output.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "curl {args:?} printed {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn sample(dir: &std::path::Path) -> (std::path::PathBuf, usize) {
    std::fs::create_dir_all(dir).unwrap();
    let clip = xf_tests::media::video("mp4", 640, 360, 3, true, 0);
    let path = dir.join("launch.mp4");
    std::fs::write(&path, &clip).unwrap();
    (path, clip.len())
}

/// Uses a finished upload as a video's `fileId`; the item's file.
fn finalise(server: &TusServer, file_id: &str) -> Value {
    let address = server.address;
    let created = curl(&[
        "-X",
        "POST",
        &format!("http://{address}/api/v1/media/videos"),
        "-H",
        &format!("X-API-Key: {}", server.key),
        "-F",
        &format!("fileId={file_id}"),
        "-F",
        r#"platforms=["tiktok"]"#,
    ]);
    assert_eq!(created["success"], true, "{created}");
    let id = created["data"][0]["id"].as_str().unwrap();
    let item = curl(&[
        &format!("http://{address}/api/v1/media/videos/{id}"),
        "-H",
        &format!("X-API-Key: {}", server.key),
    ]);
    item["data"]["file"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tuspy_uploads_in_chunks_is_interrupted_and_resumes() {
    let server = server().await;
    let (path, size) = sample(&server.media_dir.join("client"));
    // The first client sends 64 KiB chunks with sha1 checksums and stops half-way, as an
    // interrupted upload would; a second client, knowing only the URL, asks the server for
    // the offset and sends the rest.
    let script = r#"
import sys
from tusclient import client
endpoint, key, path = sys.argv[1:4]
tus = client.TusClient(endpoint, headers={"X-API-Key": key})
first = tus.uploader(path, chunk_size=64 * 1024, metadata={"filename": "launch.mp4"}, upload_checksum=True)
half = first.get_file_size() // 2
first.upload(stop_at=half)
print(first.url, first.offset)
second = tus.uploader(path, url=first.url, chunk_size=64 * 1024)
print(second.offset)
second.upload()
print(second.offset)
"#;
    let output = Command::new(python())
        .args([
            "-c",
            script,
            &format!("http://{}/api/v1/media/uploads", server.address),
            &server.key,
            path.to_str().unwrap(),
        ])
        .output()
        .expect("python runs");
    let printed = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = printed.lines().collect();
    let (url, stopped_at) = lines[0].split_once(' ').unwrap();
    let stopped_at: usize = stopped_at.parse().unwrap();
    assert!(stopped_at >= size / 2 && stopped_at < size, "{printed}");
    assert_eq!(
        lines[1],
        stopped_at.to_string(),
        "the second client resumed where the first stopped"
    );
    assert_eq!(lines[2], size.to_string());
    let file_id = url.rsplit('/').next().unwrap();
    let file = finalise(&server, file_id);
    assert_eq!(file["name"], "launch.mp4");
    assert_eq!(file["size"], size);
    assert_eq!(
        (file["width"].clone(), file["height"].clone()),
        (640.into(), 360.into())
    );
    assert_eq!(file["durationMs"], 3000);
}

/// The "Resumable upload with curl" block of `docs/media.md`, run as written.
fn media_guide_tus_steps() -> String {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/media.md"))
        .expect("docs/media.md");
    let start = guide
        .find("# Resumable upload with curl")
        .expect("docs/media.md shows a resumable upload with curl");
    let block = &guide[start..];
    block[..block.find("```").expect("the block ends")].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_media_guide_curl_steps_upload_in_two_chunks() {
    let server = server().await;
    let (path, size) = sample(&server.media_dir.join("client"));
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &media_guide_tus_steps()])
        .env("API", format!("http://{}/api/v1", server.address))
        .env("KEY", &server.key)
        .env("FILE", &path)
        .output()
        .expect("bash runs");
    let printed = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let item: Value = serde_json::from_str(printed.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("the last line is the created item: {printed}"));
    assert_eq!(item["success"], true, "{printed}");
    let file_id = printed
        .lines()
        .find_map(|line| line.strip_prefix("fileId: "))
        .expect("the steps print the fileId");
    let id = item["data"][0]["id"].as_str().unwrap();
    let shown = curl(&[
        &format!("http://{}/api/v1/media/videos/{id}", server.address),
        "-H",
        &format!("X-API-Key: {}", server.key),
    ]);
    assert_eq!(shown["data"]["file"]["size"], size, "{file_id}");
    assert_eq!(shown["data"]["file"]["durationMs"], 3000);
}
