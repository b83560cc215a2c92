//! `S3BlobStore` against a real S3-compatible server: moto's server mode (`pip install
//! 'moto[server]'`; `.ci/test` installs it into a virtualenv and sets `XF_MOTO_SERVER`).
//! The test fails, never skips, when there is no `moto_server` to run.
//!
//! It checks the blob store's contract as the local store keeps it (a blob shows only once
//! its writer finishes; aborted and dropped writers leave nothing, not even an unfinished
//! multipart upload; reads are ranged and clamped to the end; deleting is idempotent) with a
//! blob big enough to go up in several parts, and content inspection reading through S3.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xf_core::media::blob::BlobStore;
use xf_core::media::inspect::{inspect_image, ImageFacts, ImageFormat};
use xf_core::media::s3::{S3BlobStore, S3Config, PART_SIZE};

const BUCKET: &str = "xf-media";
const PREFIX: &str = "xf/test";
const MIB: usize = 1 << 20;

// -- The server -----------------------------------------------------------------------------

/// moto's `moto_server` script: `XF_MOTO_SERVER`, else the one on `PATH`.
fn moto_server() -> PathBuf {
    if let Some(path) = std::env::var_os("XF_MOTO_SERVER") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "XF_MOTO_SERVER is {}, which is no file; point it at the `moto_server` script of \
             an environment with moto (`pip install 'moto[server]'`)",
            path.display()
        );
        return path;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("moto_server"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no moto_server to run the S3 tests against: install moto's server mode with \
                 `pip install 'moto[server]'` (e.g. in a virtualenv) and put its bin/ on PATH or \
                 set XF_MOTO_SERVER to its `moto_server`; `bash .ci/test` does this by itself"
            )
        })
}

/// A moto server on a free port of 127.0.0.1, killed when dropped.
struct Moto {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Moto {
    async fn start() -> Moto {
        let program = moto_server();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let log = std::env::temp_dir().join(format!("xf-moto-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("moto's log file");
        let child = Command::new(&program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("moto's log file"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()));
        let mut moto = Moto { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((status, _)) = moto.request("GET", "/").await {
                assert_eq!(status, 200, "moto's {} answers GET /", moto.endpoint());
                break;
            }
            if let Some(status) = moto.child.try_wait().expect("moto's status") {
                panic!(
                    "{} exited ({status}) before answering:\n{}",
                    program.display(),
                    moto.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not answer on port {port} within a minute:\n{}",
                program.display(),
                moto.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        moto
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// One plain, unsigned HTTP/1.1 request (moto takes those): the status and the raw
    /// response (head and body).
    async fn request(&self, method: &str, target: &str) -> io::Result<(u16, String)> {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await?;
        let request = format!(
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| io::Error::other(format!("not an HTTP response: {response:?}")))?;
        Ok((status, response))
    }

    /// The bucket's multipart uploads in progress below `key`, as moto lists them.
    async fn uploads_in_progress(&self, key: &str) -> usize {
        let (status, response) = self
            .request("GET", &format!("/{BUCKET}?uploads&prefix={PREFIX}/{key}"))
            .await
            .expect("list the multipart uploads");
        assert_eq!(status, 200, "{response}");
        response.matches("<Upload>").count()
    }

    /// The `ETag` header of object `key`.
    async fn etag(&self, key: &str) -> String {
        let (status, response) = self
            .request("HEAD", &format!("/{BUCKET}/{PREFIX}/{key}"))
            .await
            .expect("HEAD the object");
        assert_eq!(status, 200, "{response}");
        response
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("etag")
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no ETag in {response}"))
    }
}

impl Moto {
    /// A running server with the test bucket made.
    async fn with_bucket() -> Moto {
        let moto = Moto::start().await;
        let (status, response) = moto
            .request("PUT", &format!("/{BUCKET}"))
            .await
            .expect("create the bucket");
        assert_eq!(status, 200, "creating the bucket: {response}");
        moto
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn config(endpoint: String) -> S3Config {
    S3Config {
        endpoint: Some(endpoint),
        region: "us-east-1".to_owned(),
        bucket: BUCKET.to_owned(),
        access_key_id: "xf-test-key".to_owned(),
        secret_access_key: "xf-test-secret".to_owned(),
        prefix: format!("/{PREFIX}/"),
        allow_http: true,
    }
}

// -- Helpers ----------------------------------------------------------------------------------

/// `len` bytes that differ from part to part and within them, so a part stored out of place
/// or a read off by some bytes shows.
fn sample(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

#[track_caller]
fn assert_not_found<T>(result: io::Result<T>, what: &str) {
    match result {
        Err(error) => assert_eq!(error.kind(), io::ErrorKind::NotFound, "{what}: {error}"),
        Ok(_) => panic!("{what}: expected NotFound, the blob is there"),
    }
}

/// Writes `data` under `key` in `chunk`-byte writes, and finishes.
async fn put(store: &S3BlobStore, key: &str, data: &[u8], chunk: usize) -> u64 {
    let mut writer = store.create(key).await.expect("create");
    for piece in data.chunks(chunk) {
        writer
            .write(Bytes::copy_from_slice(piece))
            .await
            .expect("write");
    }
    writer.finish().await.expect("finish")
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut chunk = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
    chunk.extend_from_slice(kind);
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(&crc32(&chunk[4..]).to_be_bytes());
    chunk
}

/// The head of a `width`×`height` 8-bit RGBA PNG: signature, IHDR and IEND (no pixels, which
/// inspection does not read).
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    [
        b"\x89PNG\r\n\x1a\n".to_vec(),
        png_chunk(b"IHDR", &ihdr),
        png_chunk(b"IEND", &[]),
    ]
    .concat()
}

// -- Tests ------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_bucket_keeps_blobs_as_the_local_store_does() {
    let moto = Moto::with_bucket().await;
    let store = S3BlobStore::new(config(moto.endpoint())).expect("the store");

    // A 20 MiB blob (and a bit) written 1 MiB at a time goes up in three parts, and shows
    // only once finished.
    let data = sample(20 * MIB + 12_345);
    let key = "media/org_1/med_big.mp4";
    let mut writer = store.create(key).await.expect("create");
    for (index, piece) in data.chunks(MIB).enumerate() {
        writer
            .write(Bytes::copy_from_slice(piece))
            .await
            .expect("write");
        if index == 10 {
            // A part is up by now (or on its way), yet there is no object.
            assert_not_found(store.open(key).await, "a blob half written");
            assert_eq!(moto.uploads_in_progress(key).await, 1);
        }
    }
    assert_not_found(store.open(key).await, "a blob written, not finished");
    assert_eq!(writer.finish().await.expect("finish"), data.len() as u64);
    let parts = data.len().div_ceil(PART_SIZE);
    assert!(parts >= 3, "{parts} parts");
    let etag = moto.etag(key).await;
    assert!(
        etag.ends_with(&format!("-{parts}\"")),
        "a {parts}-part upload's ETag, not {etag}"
    );
    assert_eq!(moto.uploads_in_progress(key).await, 0);

    let blob = store.open(key).await.expect("open");
    let len = data.len() as u64;
    assert_eq!(blob.len(), len);
    let boundary = PART_SIZE as u64;
    for (offset, wanted) in [
        (0, 100),                  // the start
        (boundary - 50, 100),      // across the first part boundary
        (2 * boundary - 1, 2),     // across the second
        (5 * MIB as u64, 6 * MIB), // a long read over a boundary
        (len - 10, 100),           // cut short by the end
        (len - 1, 1),              // the last byte
        (len, 10),                 // at the end
        (len + 1000, 10),          // past it
        (123, 0),                  // nothing asked
    ] {
        let start = usize::try_from(offset.min(len)).unwrap();
        let end = (start + wanted).min(data.len());
        let read = blob
            .read_at(offset, wanted)
            .await
            .unwrap_or_else(|error| panic!("read_at({offset}, {wanted}): {error}"));
        assert!(
            read == data[start..end],
            "read_at({offset}, {wanted}) gave {} bytes, not bytes {start}..{end}",
            read.len()
        );
    }
    let mut whole = Vec::with_capacity(data.len());
    while (whole.len() as u64) < len {
        whole.extend(
            blob.read_at(whole.len() as u64, 3 * MIB)
                .await
                .expect("read"),
        );
    }
    assert!(whole == data, "the blob reads back as written");

    // A replacement shows only once finished; until then the old blob stays.
    let mut writer = store.create(key).await.expect("create");
    writer
        .write(Bytes::from_static(b"a new version"))
        .await
        .expect("write");
    assert_eq!(store.open(key).await.expect("open").len(), len);
    assert_eq!(writer.finish().await.expect("finish"), 13);
    let blob = store.open(key).await.expect("open");
    assert_eq!(blob.len(), 13);
    assert_eq!(blob.read_at(6, 100).await.unwrap(), b"version");

    // An empty blob.
    assert_eq!(put(&store, "media/empty", b"", MIB).await, 0);
    let empty = store.open("media/empty").await.expect("open");
    assert!(empty.is_empty());
    assert_eq!(empty.read_at(0, 10).await.unwrap(), b"");

    // An aborted writer leaves no object, and no upload either.
    let mut aborted = store.create("media/aborted").await.expect("create");
    aborted
        .write(Bytes::copy_from_slice(&data[..9 * MIB]))
        .await
        .expect("write");
    assert_eq!(moto.uploads_in_progress("media/aborted").await, 1);
    aborted.abort().await;
    assert_not_found(store.open("media/aborted").await, "an aborted blob");
    assert_eq!(moto.uploads_in_progress("media/aborted").await, 0);

    // Nor does a dropped one; its upload is aborted in the background.
    let mut dropped = store.create("media/dropped").await.expect("create");
    dropped
        .write(Bytes::copy_from_slice(&data[..9 * MIB]))
        .await
        .expect("write");
    drop(dropped);
    assert_not_found(store.open("media/dropped").await, "a dropped blob");
    let deadline = Instant::now() + Duration::from_secs(30);
    while moto.uploads_in_progress("media/dropped").await > 0 {
        assert!(
            Instant::now() < deadline,
            "the dropped writer's upload is still there after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_not_found(store.open("media/dropped").await, "a dropped blob");

    // Deleting is idempotent.
    store.delete(key).await.expect("delete");
    assert_not_found(store.open(key).await, "a deleted blob");
    store.delete(key).await.expect("delete again");
    store
        .delete("media/never")
        .await
        .expect("delete what never was");
    assert_not_found(store.open("media/never").await, "a blob never written");

    // Content inspection reads an image's header through S3.
    let image = png(640, 360);
    assert_eq!(
        put(&store, "media/org_1/med_img.png", &image, 10).await,
        image.len() as u64
    );
    let reader = store.open("media/org_1/med_img.png").await.expect("open");
    assert_eq!(
        inspect_image("png", &*reader).await.expect("a PNG"),
        ImageFacts {
            format: ImageFormat::Png,
            width: 640,
            height: 360,
        }
    );

    // The objects are below the prefix.
    let (status, listing) = moto
        .request("GET", &format!("/{BUCKET}?list-type=2"))
        .await
        .expect("list the bucket");
    assert_eq!(status, 200, "{listing}");
    assert!(
        listing.contains(&format!("<Key>{PREFIX}/media/org_1/med_img.png</Key>")),
        "{listing}"
    );
    assert!(!listing.contains("<Key>media/"), "{listing}");
}

#[tokio::test]
async fn the_secret_stays_out_of_debug_output_and_keys_are_checked() {
    // No server: nothing here sends a request.
    let config = config("http://127.0.0.1:9".to_owned());
    let shown = format!("{config:?}");
    assert!(shown.contains("xf-test-key"), "{shown}");
    assert!(!shown.contains("xf-test-secret"), "{shown}");
    let store = S3BlobStore::new(config.clone()).expect("the store");
    assert!(!format!("{store:?}").contains("xf-test-secret"));

    for bad in [
        "",
        "../x",
        "a/../../x",
        "/etc/passwd",
        "a//b",
        "a b",
        "a/./b",
    ] {
        assert_eq!(
            store.create(bad).await.err().map(|e| e.kind()),
            Some(io::ErrorKind::InvalidInput),
            "{bad:?}"
        );
        assert_eq!(
            store.open(bad).await.err().map(|e| e.kind()),
            Some(io::ErrorKind::InvalidInput),
            "{bad:?}"
        );
    }
    for bad_prefix in ["a/../b", "a b"] {
        let refused = S3BlobStore::new(S3Config {
            prefix: bad_prefix.to_owned(),
            ..config.clone()
        });
        assert_eq!(
            refused.err().map(|e| e.kind()),
            Some(io::ErrorKind::InvalidInput),
            "{bad_prefix:?}"
        );
    }
}

/// xf-server's `--s3-*` flags put uploads in the bucket, below the prefix; without the
/// credentials it refuses to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xf_server_keeps_uploads_in_the_bucket_its_flags_name() {
    use clap::Parser;
    use tower::ServiceExt;

    let moto = Moto::with_bucket().await;
    let endpoint = moto.endpoint();
    let flags = |credentials: bool| {
        let mut args = vec![
            "xf-server",
            "--listen",
            "127.0.0.1:0",
            "--s3-bucket",
            BUCKET,
            "--s3-endpoint",
            &endpoint,
            "--s3-prefix",
            "server",
        ];
        if credentials {
            args.extend([
                "--s3-access-key-id",
                "xf-test-key",
                "--s3-secret-access-key",
                "xf-test-secret",
            ]);
        }
        xf_server::Config::try_parse_from(args).expect("valid flags")
    };
    let refused = xf_server::build_app(&flags(false)).await.err();
    assert!(
        matches!(refused, Some(xf_server::StartError::Media(_))),
        "{refused:?}"
    );

    let app = xf_server::build_app(&flags(true)).await.expect("app");
    let created = app
        .xf
        .admin()
        .create_organization(xf_core::NewOrganization {
            name: "Studio".into(),
            plan: "pro".into(),
            shop_domain: None,
        })
        .await
        .expect("an organization");
    let (content_type, body) = xf_tests::media::multipart(&[], Some(("pic.png", &png(64, 32))));
    let request = http::Request::post("/api/v1/media/images")
        .header("x-api-key", &created.live_key)
        .header("content-type", content_type)
        .body(axum::body::Body::from(body))
        .expect("a request");
    let response = app
        .service
        .clone()
        .oneshot(request)
        .await
        .expect("a response");
    assert_eq!(response.status(), 201);
    let (status, listing) = moto
        .request("GET", &format!("/{BUCKET}?list-type=2&prefix=server/"))
        .await
        .expect("list the bucket");
    assert_eq!(status, 200, "{listing}");
    assert!(
        listing.contains(&format!("<Key>server/media/{}/", created.organization.id)),
        "{listing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_is_listed_one_level_at_a_time_below_the_prefix() {
    let moto = Moto::with_bucket().await;
    let store = S3BlobStore::new(config(moto.endpoint())).expect("the store");
    for key in [
        "media/org_1/a.mp4",
        "media/org_1/b.png",
        "media/org_2/c.mp4",
        "uploads/org_1/upl_1/chunk",
    ] {
        put(&store, key, b"x", 1).await;
    }
    let top = store.list("").await.expect("list");
    assert_eq!(top.folders, ["media/", "uploads/"]);
    assert!(top.blobs.is_empty());
    let media = store.list("media/").await.expect("list");
    assert_eq!(media.folders, ["media/org_1/", "media/org_2/"]);
    let org = store.list("media/org_1/").await.expect("list");
    let keys: Vec<_> = org.blobs.iter().map(|b| b.key.as_str()).collect();
    assert_eq!(keys, ["media/org_1/a.mp4", "media/org_1/b.png"]);
    let age = org.blobs[0].modified.elapsed().unwrap_or_default();
    assert!(age < std::time::Duration::from_secs(600), "{age:?}");
    assert_eq!(
        store
            .list("uploads/org_1/upl_1/")
            .await
            .expect("list")
            .blobs[0]
            .key,
        "uploads/org_1/upl_1/chunk"
    );
    assert!(store.list("nothing/").await.expect("list").blobs.is_empty());
    assert!(store.list("../").await.is_err());
}
