//! xf-server in the test's own process, on a free port of loopback, and a raw HTTP/1.1
//! client's answer reader: for tests that need a real socket (slow or cut-off clients, idle
//! connections, stock clients such as tuspy and curl).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// A running server, with its background runtime as xf-server runs it (scans and posts run);
/// stopped (and its media directory removed) when dropped.
pub struct Server {
    /// Where it listens.
    pub address: SocketAddr,
    /// Its facade, for seeding through use cases.
    pub xf: xf_core::Xf,
    /// Its blob store's directory, fresh for this server.
    pub media_dir: PathBuf,
    /// With `--demo`: the media API's demo organization and its keys.
    pub media_demo: Option<xf_core::CreatedOrganization>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The background runtime, stopped with the test's runtime.
    _workers: xf_core::runtime::WorkerHandle,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("address", &self.address)
            .field("media_dir", &self.media_dir)
            .finish_non_exhaustive()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = std::fs::remove_dir_all(&self.media_dir);
    }
}

impl Server {
    /// xf-server with the memory store, a media directory of its own and `flags` (as on its
    /// command line), serving with the connection bounds those flags set.
    pub async fn start(flags: &[&str]) -> Server {
        let media_dir =
            std::env::temp_dir().join(format!("xf-server-test-{}", uuid::Uuid::now_v7().simple()));
        // Bound first, so that links the server makes (reports, media, connect links) lead to it.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let base_url = format!("http://{address}");
        let mut args = vec![
            "xf-server",
            "--listen",
            "127.0.0.1:0",
            "--media-dir",
            media_dir.to_str().expect("a UTF-8 path"),
        ];
        if !flags.contains(&"--public-base-url") {
            args.extend(["--public-base-url", &base_url]);
        }
        args.extend_from_slice(flags);
        let config = xf_server::Config::try_parse_from(args).expect("valid flags");
        let app = xf_server::build_app(&config).await.expect("app");
        // The background runtime, as xf-server runs it beside the API: scans and posts run.
        let workers = app.xf.spawn_workers(xf_server::worker_options(&config));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(xf_server::serve::serve(
            listener,
            app.service,
            config.serve_options(),
            async move {
                let _ = stopped.await;
            },
        ));
        Server {
            address,
            xf: app.xf,
            media_dir,
            media_demo: app.media_demo,
            stop: Some(stop),
            _workers: workers,
        }
    }
}

/// Reads an HTTP/1.1 answer until the server closes the connection (or resets it): its
/// status (0 when nothing came) and body.
pub async fn read_answer(stream: &mut (impl AsyncReadExt + Unpin)) -> (u16, String) {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}
