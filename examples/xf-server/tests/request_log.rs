//! The built xf-server writes one log line per request, through its writer thread, and
//! writes out every queued line when it stops.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// `GET /api/v1/health` with `X-Request-Id: id`; the status line.
fn get_health(port: u16, id: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: {id}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    reply.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn every_request_is_logged_once_and_nothing_is_lost_at_shutdown() {
    let port = free_port();
    let server = Command::new(env!("CARGO_BIN_EXE_xf-server"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "info")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xf-server starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "xf-server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }

    let ids: Vec<String> = (0..200).map(|n| format!("log-test-{n}")).collect();
    for id in &ids {
        assert_eq!(get_health(port, id), "HTTP/1.1 200 OK");
    }
    // Stopped right after the last answer: its line may still be queued.
    let stopped = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    let output = server.wait_with_output().expect("xf-server stops");
    assert!(output.status.success(), "{:?}", output.status);
    let log = String::from_utf8_lossy(&output.stderr);

    for id in &ids {
        let lines: Vec<&str> = log
            .lines()
            .filter(|line| line.contains(&format!("request_id={id} ")))
            .collect();
        assert_eq!(lines.len(), 1, "{id}: {lines:?}");
        assert!(
            lines[0].contains(
                "service=api method=GET path=/api/v1/health route=/api/v1/health status=200"
            ),
            "{}",
            lines[0]
        );
    }
    // Whole lines, in the order the requests were answered, before the server's last words.
    let order: Vec<usize> = ids
        .iter()
        .map(|id| log.find(&format!("request_id={id} ")).expect("logged"))
        .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]));
    let stopped_at = log.find("xf-server stopped").expect("the last line");
    assert!(order.iter().all(|at| *at < stopped_at));
}
