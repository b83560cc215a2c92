//! Ingest speed of a 1 GiB video upload against a plain file copy on the same disk, with the
//! peak memory of the upload. The upload is a real multipart `POST /api/v1/media/videos` over
//! a loopback socket to xf-server (in this process, memory store, `--media-dir` on the disk
//! under test), streamed from a file by a hyper client; it ends when the server answered
//! `201`, so it includes the multipart parsing, the blob store's write and `fsync`, the
//! content inspection and the store's insert. The copy reads the same file and writes a new
//! one with 1 MiB buffers, then `fsync`s it (the upload's durability, for a fair
//! comparison); `std::fs::copy` (the kernel's `copy_file_range`) is reported beside it, and
//! so is a direct copy: 1 MiB reads written with `O_DIRECT`, as the blob store writes (what
//! the disk takes without the page cache). So is what crossing a socket costs: the same file
//! sent over a loopback TCP socket in 1 MiB writes and written to disk on the other side in
//! 1 MiB writes, then `fsync`ed (no HTTP, no parsing). Beside each socket copy and upload, the
//! CPU time the process used (user and system, all threads: client and server alike). Not a
//! test: it asserts nothing about speed and reports figures to quote.
//!
//! The sample is an ffmpeg video followed by a `free` box up to the size: a valid MP4 whose
//! content check reads its header boxes and `moov`, then skips the padding.
//!
//! Run with: `cargo bench -p xf-tests --bench ingest` (needs ffmpeg, as the tests do).
//! `XF_BENCH_DIR` (default: the system's temporary directory) picks the disk, `XF_BENCH_MIB`
//! (default 1024) the size and `XF_BENCH_RUNS` (default 5) the rounds; medians are reported.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).
//! `XF_BENCH_UPLOADS_ONLY=1` makes the uploads alone, each round's time printed, to profile
//! them apart from the copies (`XF_BENCH_UPLOADS_ONLY=1 perf record -g -- <the bench's binary>
//! --bench`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xf_tests::bench::{flag, median, organization, runs, size};

use bytes::Bytes;
use clap::Parser;
use futures::StreamExt;
use http::{Method, Request};
use http_body_util::{BodyExt, StreamBody};
use hyper_util::rt::TokioIo;

const CHUNK: usize = 1 << 20;

/// A valid MP4 of `size` bytes: a real short video, then a `free` box to the size.
fn sample(path: &Path, size: u64) {
    // Long and large enough for TikTok's rules (3 s, 360 px a side, 23 fps and up).
    let video = xf_tests::media::video("mp4", 640, 360, 4, true, 0);
    let padding = size - video.len() as u64;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("the sample"));
    file.write_all(&video).unwrap();
    let box_size = u32::try_from(padding).expect("a padding box under 4 GiB");
    file.write_all(&box_size.to_be_bytes()).unwrap();
    file.write_all(b"free").unwrap();
    let zeros = vec![0u8; CHUNK];
    let mut left = padding - 8;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        file.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
    file.flush().unwrap();
    file.get_ref().sync_all().unwrap();
}

/// Everything `from` gives written to `to`, in 1 MiB reads and writes.
fn pump(from: &mut impl Read, to: &mut impl Write) {
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let n = from.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        to.write_all(&buffer[..n]).unwrap();
    }
}

/// A plain copy: 1 MiB reads and writes, then `fsync`.
fn buffered_copy(from: &Path, to: &Path) -> Duration {
    let started = Instant::now();
    let mut source = std::fs::File::open(from).unwrap();
    let mut target = std::fs::File::create(to).unwrap();
    pump(&mut source, &mut target);
    target.sync_data().unwrap();
    started.elapsed()
}

/// `std::fs::copy` (copy_file_range), then `fsync`.
fn kernel_copy(from: &Path, to: &Path) -> Duration {
    let started = Instant::now();
    std::fs::copy(from, to).unwrap();
    std::fs::File::open(to).unwrap().sync_data().unwrap();
    started.elapsed()
}

/// A copy written with direct I/O (`O_DIRECT`): 1 MiB reads into an aligned buffer, each
/// written straight to the disk; the last block padded, the file cut back to the size, then
/// `fsync` (for the file's size and the disk's write cache).
fn direct_copy(from: &Path, to: &Path) -> Duration {
    use std::os::unix::fs::OpenOptionsExt;
    const ALIGN: usize = 4096;
    let started = Instant::now();
    let mut source = std::fs::File::open(from).unwrap();
    let mut target = std::fs::File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(to)
        .expect("a file system with direct I/O (set XF_BENCH_DIR to one)");
    let mut memory = vec![0u8; CHUNK + ALIGN];
    let start = (ALIGN - memory.as_ptr() as usize % ALIGN) % ALIGN;
    let buffer = &mut memory[start..start + CHUNK];
    let mut size = 0;
    loop {
        // A full buffer unless the file ends: a short read mid-file would pad a block there.
        let mut n = 0;
        while n < CHUNK {
            match source.read(&mut buffer[n..]).unwrap() {
                0 => break,
                read => n += read,
            }
        }
        if n == 0 {
            break;
        }
        let padded = n.next_multiple_of(ALIGN);
        buffer[n..padded].fill(0);
        target.write_all(&buffer[..padded]).unwrap();
        size += n as u64;
        if padded != n {
            break;
        }
    }
    assert_eq!(
        size,
        std::fs::metadata(from).unwrap().len(),
        "the whole file"
    );
    target.set_len(size).unwrap();
    target.sync_data().unwrap();
    started.elapsed()
}

/// The file sent over a loopback TCP socket and written to `to` on the other side, both in
/// 1 MiB reads and writes, then `fsync`; ends when the receiving side has synced and said so.
fn socket_copy(from: &Path, to: &Path) -> Duration {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let target_path = to.to_owned();
    let receiver = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut target = std::fs::File::create(target_path).unwrap();
        pump(&mut socket, &mut target);
        target.sync_data().unwrap();
        socket.write_all(b"k").unwrap();
    });
    let started = Instant::now();
    let mut socket = std::net::TcpStream::connect(address).unwrap();
    let mut source = std::fs::File::open(from).unwrap();
    pump(&mut source, &mut socket);
    socket.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = [0u8; 1];
    socket.read_exact(&mut answer).unwrap();
    let elapsed = started.elapsed();
    receiver.join().unwrap();
    elapsed
}

/// Kibibytes of a `/proc/self/status` line.
fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU seconds this process has used, user and system: `/proc/self/stat`'s `utime` and
/// `stime` (the 14th and 15th fields), in the kernel's 100 ticks a second.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's name, which ends with the last `)`: the 3rd on.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// How long `run` took and the CPU time the process used meanwhile.
async fn timed(run: impl std::future::Future<Output = Duration>) -> (f64, f64) {
    let cpu = cpu_seconds();
    let elapsed = run.await;
    (elapsed.as_secs_f64(), cpu_seconds() - cpu)
}

/// Resets the peak resident size (Linux: `5` to `clear_refs`).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Uploads `path` as a video form and returns how long until the `201`.
async fn upload(address: std::net::SocketAddr, key: &str, path: &Path) -> Duration {
    let boundary = xf_tests::media::BOUNDARY;
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"platforms\"\r\n\r\n[\"tiktok\"]\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.mp4\"\r\n\
         Content-Type: video/mp4\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let size = std::fs::metadata(path).unwrap().len() + (head.len() + tail.len()) as u64;
    let started = Instant::now();
    // The body: the form's head, the file in 1 MiB reads (on a thread of its own, as a plain
    // copy reads it, a few chunks ahead of the socket), the closing boundary.
    let (chunks, mut body) = tokio::sync::mpsc::channel::<Bytes>(4);
    let source = path.to_owned();
    let reader = std::thread::spawn(move || {
        let mut file = std::fs::File::open(source).unwrap();
        loop {
            let mut buffer = Vec::with_capacity(CHUNK);
            let n = (&mut file)
                .take(CHUNK as u64)
                .read_to_end(&mut buffer)
                .unwrap();
            if n == 0 || chunks.blocking_send(Bytes::from(buffer)).is_err() {
                break;
            }
        }
    });
    let mut head = Some(Bytes::from(head));
    let mut tail = Some(Bytes::from(tail));
    let chunks = futures::stream::poll_fn(move |context| {
        if let Some(head) = head.take() {
            return std::task::Poll::Ready(Some(head));
        }
        match body.poll_recv(context) {
            std::task::Poll::Ready(None) => std::task::Poll::Ready(tail.take()),
            other => other,
        }
    })
    .map(|chunk| Ok::<_, std::io::Error>(hyper::body::Frame::data(chunk)));
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/media/videos")
        .header("host", address.to_string())
        .header("x-api-key", key)
        .header("content-length", size)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(StreamBody::new(chunks))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let elapsed = started.elapsed();
    reader.join().unwrap();
    elapsed
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let mib = size("XF_BENCH_MIB", 1024, 8) as u64;
    let root: PathBuf = std::env::var_os("XF_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("xf-ingest-bench-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let source = root.join("sample.mp4");
    sample(&source, mib << 20);
    let media_dir = root.join("media");
    let config = xf_server::Config::try_parse_from([
        "xf-server",
        "--listen",
        "127.0.0.1:0",
        "--admin-token",
        "bench-admin-token",
        "--media-dir",
        media_dir.to_str().unwrap(),
    ])
    .unwrap();
    let app = xf_server::build_app(&config).await.unwrap();
    let xf = app.xf.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(xf_server::serve(
        listener,
        app.service,
        std::future::pending(),
    ));
    let created = organization(&xf, "pro").await;
    xf.admin()
        .connect_channel(
            &created.organization.id,
            serde_json::from_value(serde_json::json!({
                "platform": "tiktok", "accountId": "tt", "displayName": "Bench", "accessToken": "t"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let key = created.live_key;

    let copy_of = |copy: fn(&Path, &Path) -> Duration| {
        let target = root.join("copy.mp4");
        let source = source.clone();
        async move {
            let elapsed = copy(&source, &target);
            std::fs::remove_file(target).unwrap();
            elapsed
        }
    };
    // Per measure: the seconds of each round, the CPU seconds of each round.
    let names = [
        "copy",
        "std::fs::copy",
        "direct copy",
        "socket copy",
        "upload",
    ];
    let mut seconds = vec![Vec::new(); names.len()];
    let mut cpu = vec![Vec::new(); names.len()];
    let mut peaks = Vec::new();
    if flag("XF_BENCH_UPLOADS_ONLY") {
        for round in 1..=runs {
            let (s, c) = timed(upload(address, &key, &source)).await;
            let _ = std::fs::remove_dir_all(media_dir.join("media"));
            println!("round {round}: upload {s:.2} s (CPU {c:.2} s)");
        }
        let _ = std::fs::remove_dir_all(&root);
        return;
    }
    for round in 1..=runs {
        let mut measured = vec![
            timed(copy_of(buffered_copy)).await,
            timed(copy_of(kernel_copy)).await,
            timed(copy_of(direct_copy)).await,
            timed(copy_of(socket_copy)).await,
        ];
        let before = status_kib("VmRSS:");
        reset_peak();
        measured.push(timed(upload(address, &key, &source)).await);
        let peak = status_kib("VmHWM:").saturating_sub(before) as f64 / 1024.0;
        // The uploaded files go, so every round writes to a disk as full as the last.
        let _ = std::fs::remove_dir_all(media_dir.join("media"));
        let line: Vec<String> = names
            .iter()
            .zip(&measured)
            .map(|(name, (s, c))| format!("{name} {s:.2} s (CPU {c:.2} s)"))
            .collect();
        println!(
            "round {round}: {}, peak RSS growth {peak:.1} MiB",
            line.join(", ")
        );
        for (i, (s, c)) in measured.into_iter().enumerate() {
            seconds[i].push(s);
            cpu[i].push(c);
        }
        peaks.push(peak);
    }
    let seconds: Vec<f64> = seconds.into_iter().map(median).collect();
    let cpu: Vec<f64> = cpu.into_iter().map(median).collect();
    let mb = mib as f64 * 1.048576;
    let each: Vec<String> = names
        .iter()
        .zip(seconds.iter().zip(&cpu))
        .map(|(name, (s, c))| format!("{name} {s:.2} s ({:.0} MB/s, CPU {c:.2} s)", mb / s))
        .collect();
    let upload = seconds[names.len() - 1];
    let ratios: Vec<String> = names[..names.len() - 1]
        .iter()
        .zip(&seconds)
        .map(|(name, s)| format!("/ {name} = {:.2}", s / upload))
        .collect();
    println!(
        "{mib} MiB, medians of {runs}: {}; upload speed {}; \
         peak RSS growth during an upload: median {:.1} MiB",
        each.join(", "),
        ratios.join(", "),
        median(peaks)
    );
    let _ = std::fs::remove_dir_all(&root);
}
