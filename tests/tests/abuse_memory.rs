//! Oversized forms do not take the server's memory: a 256 MiB text field, four of them at
//! once, and thousands of parts are refused after a bounded read, and the process's peak
//! resident memory (`VmHWM` in `/proc/self/status`) grows by less than 64 MiB.
//!
//! A test binary of its own, with one test, so that nothing else runs in the process whose
//! peak is read.

use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use xf_core::NewOrganization;
use xf_tests::server::{read_answer, Server};

const BOUNDARY: &str = "xf-memory-boundary";

/// The peak resident memory of this process so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024
}

/// Sends a form of `parts` text parts of `part_bytes` each (generated as they are sent, never
/// held) and returns the answer's status and body, which the server writes before it closes
/// the connection without reading the rest.
async fn send_form(
    address: SocketAddr,
    key: &str,
    parts: usize,
    part_bytes: usize,
) -> (u16, String) {
    let part_head = |n: usize| {
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"field{n}\"\r\n\r\n")
    };
    let length: usize = (0..parts)
        .map(|n| part_head(n).len() + part_bytes + 2)
        .sum::<usize>()
        + BOUNDARY.len()
        + 6;
    let head = format!(
        "POST /media/videos HTTP/1.1\r\nHost: test\r\nConnection: close\r\nX-API-Key: {key}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n"
    );
    let stream = TcpStream::connect(address).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let sender = tokio::spawn(async move {
        let chunk = vec![b'a'; 64 << 10];
        writer.write_all(head.as_bytes()).await?;
        for n in 0..parts {
            writer.write_all(part_head(n).as_bytes()).await?;
            let mut left = part_bytes;
            while left > 0 {
                let now = left.min(chunk.len());
                writer.write_all(&chunk[..now]).await?;
                left -= now;
            }
            writer.write_all(b"\r\n").await?;
        }
        writer
            .write_all(format!("--{BOUNDARY}--\r\n").as_bytes())
            .await?;
        // Kept open until the answer is read: a client that closes its side is gone.
        std::future::pending::<std::io::Result<()>>().await
    });
    let answer = read_answer(&mut reader).await;
    sender.abort();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_forms_are_refused_in_bounded_memory() {
    let server = Server::start(&[]).await;
    let key = server
        .xf
        .admin()
        .create_organization(NewOrganization {
            name: "Memory".to_owned(),
            plan: "pro".to_owned(),
            shop_domain: None,
        })
        .await
        .expect("an organization")
        .live_key;
    let address = server.address;
    // Warm up: one ordinary request, so the baseline holds what every request needs.
    let (status, body) = send_form(address, &key, 1, 10).await;
    assert_eq!(status, 400, "{body}");
    let before = peak_rss();

    // One text field of 256 MiB.
    let (status, body) = send_form(address, &key, 1, 256 << 20).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("65536 bytes"), "{body}");
    assert!(
        body.len() < 1024,
        "the error echoes input: {} bytes",
        body.len()
    );
    // Four at once.
    let four: Vec<_> = (0..4)
        .map(|_| {
            let key = key.clone();
            tokio::spawn(async move { send_form(address, &key, 1, 256 << 20).await })
        })
        .collect();
    for answer in four {
        let (status, body) = answer.await.expect("a client");
        assert_eq!(status, 400, "{body}");
    }
    // 4,000 parts of 64 KiB (256 MiB in all): refused at the part limit, or at the total of
    // text, whichever comes first.
    let (status, body) = send_form(address, &key, 4000, 64 << 10).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("1048576 bytes in all"), "{body}");
    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "the peak resident memory grew by {} MiB",
        grown >> 20
    );
}
