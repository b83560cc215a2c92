//! Bounded under abuse: xf-server on a real socket, probed as an attacker and as an unlucky
//! client would. Slow uploads hold no thread and starve nobody; forms cut off at any point
//! leave no file behind; idle and half-sent connections are closed, busy ones are not; at the
//! connection cap the server waits instead of failing.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xf_core::NewOrganization;
use xf_tests::server::{read_answer, Server};

const ADMIN_TOKEN: &str = "abuse-admin-token";
const BOUNDARY: &str = "xf-abuse-boundary";

/// xf-server with the admin API and `flags`.
async fn server(flags: &[&str]) -> Server {
    let mut all = vec!["--admin-token", ADMIN_TOKEN];
    all.extend_from_slice(flags);
    Server::start(&all).await
}

/// A `pro` organization with a Pinterest channel: its id and live key.
async fn organization(server: &Server, name: &str) -> (String, String) {
    let created = server
        .xf
        .admin()
        .create_organization(NewOrganization {
            name: name.to_owned(),
            plan: "pro".to_owned(),
            shop_domain: None,
        })
        .await
        .expect("an organization");
    let id = created.organization.id.to_string();
    let channel = br#"{"platform": "pinterest", "accountId": "pin-1", "displayName": "Pins", "accessToken": "t"}"#;
    let (status, body) = exchange(
        server.address,
        &head(
            "POST",
            &format!("/admin/organizations/{id}/channels"),
            &[
                ("authorization", &format!("Bearer {ADMIN_TOKEN}")),
                ("content-type", "application/json"),
            ],
            Some(channel.len()),
        ),
        channel,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    (id, created.live_key)
}

/// A request head (`Connection: close`).
fn head(method: &str, path: &str, headers: &[(&str, &str)], length: Option<usize>) -> String {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Sends `head` and `body` on a new connection and reads the answer: status and body.
async fn exchange(address: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("send");
    stream.write_all(body).await.expect("send");
    read_answer(&mut stream).await
}

/// The start of an image upload form to Pinterest, up to the file's first byte.
fn form_start(file_name: &str) -> String {
    format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"platforms\"\r\n\r\n[\"pinterest\"]\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"pinterestBoardId\"\r\n\r\nboard-1\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
}

fn form_end() -> String {
    format!("\r\n--{BOUNDARY}--\r\n")
}

fn upload_head(key: &str, length: usize) -> String {
    head(
        "POST",
        "/media/images",
        &[
            ("x-api-key", key),
            (
                "content-type",
                &format!("multipart/form-data; boundary={BOUNDARY}"),
            ),
        ],
        Some(length),
    )
}

/// A whole image upload form and its head.
fn image_upload(key: &str, png: &[u8]) -> (String, Vec<u8>) {
    let mut body = form_start("a.png").into_bytes();
    body.extend_from_slice(png);
    body.extend_from_slice(form_end().as_bytes());
    (upload_head(key, body.len()), body)
}

/// The files below `dir` (recursively), `.partial` included.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_none_or(|e| e != "lock") {
                found.push(path);
            }
        }
    }
    found
}

/// The number of threads of this process.
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a thread count")
}

/// The items an organization has, by the media list's total.
async fn image_count(server: &Server, key: &str) -> u64 {
    let (status, body) = exchange(
        server.address,
        &head("GET", "/media/images?limit=1", &[("x-api-key", key)], None),
        b"",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    body["data"]["pagination"]["total"]
        .as_u64()
        .expect("a total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_hold_no_thread_and_starve_nobody() {
    // More open uploads than tokio's 512 blocking threads, each trickling; the per-organization
    // cap is raised so that all of them are taken.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let server = server(&[
        "--max-uploads-per-organization",
        "1000",
        "--body-rate-window",
        "120",
        "--min-body-rate",
        "1",
    ])
    .await;
    let (_, slow_key) = organization(&server, "Trickle").await;
    let (_, key) = organization(&server, "Busy").await;
    let png = xf_tests::media::image("png", 64, 48);
    let threads_before = threads();

    let mut slow = Vec::new();
    for _ in 0..600 {
        let mut stream = TcpStream::connect(server.address).await.expect("connect");
        let start = form_start("slow.png");
        let length = start.len() + 10 * png.len() + form_end().len();
        stream
            .write_all(upload_head(&slow_key, length).as_bytes())
            .await
            .expect("send");
        stream.write_all(start.as_bytes()).await.expect("send");
        // The first bytes of the file: the upload has begun and holds its blob writer.
        stream.write_all(&png[..8]).await.expect("send");
        slow.push(stream);
    }
    // Every one of them has reached the blob store.
    let partials = server.media_dir.join(".partial");
    let deadline = Instant::now() + Duration::from_secs(30);
    while files_below(&partials).len() < 600 {
        assert!(
            Instant::now() < deadline,
            "the slow uploads did not all start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let threads_held = threads();
    assert!(
        threads_held < threads_before + 50,
        "600 open uploads hold {} threads",
        threads_held - threads_before
    );

    // Another organization's upload and tus create answer at once.
    let started = Instant::now();
    let (head, body) = image_upload(&key, &png);
    let (status, answer) = exchange(server.address, &head, &body).await;
    assert_eq!(status, 201, "{answer}");
    let upload_took = started.elapsed();
    let started = Instant::now();
    let create = self::head(
        "POST",
        "/media/uploads",
        &[
            ("x-api-key", &key),
            ("tus-resumable", "1.0.0"),
            ("upload-length", "1000"),
        ],
        Some(0),
    );
    let (status, answer) = exchange(server.address, &create, b"").await;
    assert_eq!(status, 201, "{answer}");
    let create_took = started.elapsed();
    assert!(
        upload_took < Duration::from_secs(2) && create_took < Duration::from_secs(2),
        "with 600 slow uploads open, an upload took {upload_took:?} and a tus create {create_took:?}"
    );
    drop(slow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_has_a_cap_on_uploads_in_progress() {
    let server = server(&["--max-uploads-per-organization", "2"]).await;
    let (_, key) = organization(&server, "Capped").await;
    let (_, other) = organization(&server, "Other").await;
    let png = xf_tests::media::image("png", 64, 48);
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.address).await.expect("connect");
        let start = form_start("slow.png");
        let length = start.len() + png.len() + form_end().len();
        stream
            .write_all(upload_head(&key, length).as_bytes())
            .await
            .expect("send");
        stream.write_all(start.as_bytes()).await.expect("send");
        stream.write_all(&png[..8]).await.expect("send");
        open.push(stream);
    }
    let partials = server.media_dir.join(".partial");
    let deadline = Instant::now() + Duration::from_secs(10);
    while files_below(&partials).len() < 2 {
        assert!(Instant::now() < deadline, "the uploads did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (head, body) = image_upload(&key, &png);
    let (status, answer) = exchange(server.address, &head, &body).await;
    assert_eq!(status, 429, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["error"]["code"], "too_many_uploads");
    assert!(answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("2 uploads")));
    // Another organization is not held back.
    let (head, body) = image_upload(&other, &png);
    assert_eq!(exchange(server.address, &head, &body).await.0, 201);
    // Once one finishes, the organization uploads again.
    let mut first = open.remove(0);
    first.write_all(&png[8..]).await.expect("send");
    first.write_all(form_end().as_bytes()).await.expect("send");
    assert_eq!(read_answer(&mut first).await.0, 201);
    let (head, body) = image_upload(&key, &png);
    assert_eq!(exchange(server.address, &head, &body).await.0, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_cut_off_anywhere_leave_no_file_behind() {
    let server = server(&[]).await;
    let (_, key) = organization(&server, "Aborts").await;
    let png = xf_tests::media::image("png", 64, 48);
    let (head, body) = image_upload(&key, &png);
    let mut request = head.into_bytes();
    request.extend_from_slice(&body);

    // 40 complete forms whose client goes away right after the last byte, and 40 cut off in
    // the middle of the file.
    let mut tasks = Vec::new();
    for n in 0..80 {
        let request = request.clone();
        let address = server.address;
        let half = png.len() / 2;
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(address).await.expect("connect");
            let end = if n % 2 == 0 {
                request.len()
            } else {
                request.len() - half
            };
            stream.write_all(&request[..end]).await.expect("send");
            // Closed without reading the answer.
            drop(stream);
        }));
    }
    for task in tasks {
        task.await.expect("a client");
    }
    // A tus chunk cut off half-way.
    let tus = {
        let create = self::head(
            "POST",
            "/media/uploads",
            &[
                ("x-api-key", &key),
                ("tus-resumable", "1.0.0"),
                ("upload-length", "100000"),
            ],
            Some(0),
        );
        let mut stream = TcpStream::connect(server.address).await.expect("connect");
        stream.write_all(create.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer).to_string();
        let location = answer
            .lines()
            .find_map(|line| line.strip_prefix("location: "))
            .expect("a Location")
            .trim()
            .to_owned();
        location
    };
    let mut stream = TcpStream::connect(server.address).await.expect("connect");
    let patch = self::head(
        "PATCH",
        &tus,
        &[
            ("x-api-key", &key),
            ("tus-resumable", "1.0.0"),
            ("upload-offset", "0"),
            ("content-type", "application/offset+octet-stream"),
        ],
        Some(100_000),
    );
    stream.write_all(patch.as_bytes()).await.expect("send");
    stream.write_all(&[1u8; 50_000]).await.expect("send");
    drop(stream);

    // Once the server has settled, every file is a stored item's: as many files as items,
    // and no partial file.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let files = files_below(&server.media_dir);
        let items = image_count(&server, &key).await;
        let stored: Vec<_> = files
            .iter()
            .filter(|f| !f.starts_with(server.media_dir.join(".partial")))
            .collect();
        if stored.len() as u64 == items && stored.len() == files.len() {
            assert!(items <= 40, "{items} items from 40 complete forms");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} files for {items} items: {files:?}",
            files.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_connections_are_closed_in_time() {
    let server = server(&["--header-read-timeout", "1", "--idle-timeout", "2"]).await;
    let bound = Duration::from_secs(1) + Duration::from_millis(1500);

    // Silent from the start.
    let started = Instant::now();
    let mut silent = TcpStream::connect(server.address).await.expect("connect");
    // Headers begun, never finished.
    let mut half = TcpStream::connect(server.address).await.expect("connect");
    half.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: test\r\n")
        .await
        .expect("send");
    // A keep-alive connection after its answer.
    let mut kept = TcpStream::connect(server.address).await.expect("connect");
    kept.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .expect("send");
    let mut first = [0u8; 12];
    kept.read_exact(&mut first).await.expect("an answer");
    assert_eq!(&first, b"HTTP/1.1 200");

    for (name, stream) in [
        ("silent", &mut silent),
        ("half-sent", &mut half),
        ("kept alive", &mut kept),
    ] {
        let mut rest = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "the {name} connection stayed open");
        assert!(
            started.elapsed() <= bound,
            "the {name} connection closed after {:?}",
            started.elapsed()
        );
    }
}

type Empty = http_body_util::Empty<bytes::Bytes>;

/// An HTTP/2 connection (prior knowledge) to `address`: its sender, and the connection to
/// drive.
async fn http2(
    address: SocketAddr,
) -> (
    hyper::client::conn::http2::SendRequest<Empty>,
    hyper::client::conn::http2::Connection<
        hyper_util::rt::TokioIo<TcpStream>,
        Empty,
        hyper_util::rt::TokioExecutor,
    >,
) {
    let stream = TcpStream::connect(address).await.expect("connect");
    hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("an HTTP/2 connection")
}

/// `GET /api/v1/health` on `address`, for an HTTP/2 connection.
fn health(address: SocketAddr) -> http::Request<Empty> {
    http::Request::get(format!("http://{address}/api/v1/health"))
        .body(Empty::new())
        .expect("a request")
}

/// Reads one answer off a keep-alive connection: its status, the body read to its length.
async fn next_answer(stream: &mut TcpStream) -> u16 {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await.expect("an answer's head"));
    }
    let head = String::from_utf8(head).expect("a text head");
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("a content length");
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.expect("the body");
    head[9..12].parse().expect("a status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_in_use_outlives_the_header_time_out() {
    // Each request's headers come well within a second of the previous answer: the time-out
    // starts over with each answer, so the connection serves them all, over 2.5 s.
    let server = server(&["--header-read-timeout", "1", "--idle-timeout", "10"]).await;
    let mut stream = TcpStream::connect(server.address).await.expect("connect");
    let started = Instant::now();
    for _ in 0..6 {
        stream
            .write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .expect("send on the kept connection");
        assert_eq!(next_answer(&mut stream).await, 200);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(2500));

    // HTTP/2 has no header time-out: a connection quiet for longer than it, and shorter than
    // the idle time-out, still takes requests.
    let (mut sender, connection) = http2(server.address).await;
    tokio::spawn(connection);
    for _ in 0..2 {
        let answer = sender
            .send_request(health(server.address))
            .await
            .expect("an answer");
        assert_eq!(answer.status(), 200);
        tokio::time::sleep(Duration::from_millis(1800)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_after_the_idle_timeout() {
    let server = server(&["--header-read-timeout", "5", "--idle-timeout", "1"]).await;
    let (mut sender, connection) = http2(server.address).await;
    let started = Instant::now();
    let driven = tokio::spawn(connection);
    let answer = sender
        .send_request(health(server.address))
        .await
        .expect("an answer");
    assert_eq!(answer.status(), 200);
    drop(answer);
    // Nothing more is sent: the server closes the connection once it has been idle a second.
    tokio::time::timeout(Duration::from_secs(10), driven)
        .await
        .expect("the idle connection was closed")
        .expect("the connection task")
        .ok();
    assert!(
        started.elapsed() <= Duration::from_millis(2500),
        "closed after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_new_connections_wait_for_a_free_place() {
    let server = server(&["--max-connections", "3", "--header-read-timeout", "2"]).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(server.address).await.expect("connect"));
    }
    // The kernel completes the handshake, but the server does not take the connection until
    // one of the three is closed by the header time-out.
    let started = Instant::now();
    let (status, _) = exchange(
        server.address,
        &head("GET", "/api/v1/health", &[], None),
        b"",
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "answered after {:?}, before a place was free",
        started.elapsed()
    );
    for mut stream in held {
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
    }
}
