//! A TCP proxy that can take its target away: [`Proxy`], for tests of what xf does while
//! PostgreSQL is unreachable and after it is back.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Forwards every connection made to [`Proxy::address`] to the target, until
/// [`Proxy::cut`]: then every open connection is closed, and new ones are accepted and closed
/// at once (a server that went away), until [`Proxy::restore`]. Stops when dropped.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    down: Arc<watch::Sender<bool>>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a free loopback port to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address");
        let down = Arc::new(watch::channel(false).0);
        let task = tokio::spawn(accept(listener, target, Arc::clone(&down)));
        Proxy {
            address,
            down,
            task,
        }
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Closes every connection and refuses service until [`Proxy::restore`].
    pub fn cut(&self) {
        self.down.send_replace(true);
    }

    /// Forwards new connections again.
    pub fn restore(&self) {
        self.down.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, target: SocketAddr, down: Arc<watch::Sender<bool>>) {
    while let Ok((client, _)) = listener.accept().await {
        if *down.borrow() {
            drop(client);
            continue;
        }
        let mut cut = down.subscribe();
        tokio::spawn(async move {
            let Ok(mut server) = TcpStream::connect(target).await else {
                return;
            };
            let mut client = client;
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                _ = cut.wait_for(|down| *down) => {}
            }
        });
    }
}
