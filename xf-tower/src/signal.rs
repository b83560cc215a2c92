//! [`shutdown_signal`]: when a host should stop.

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM (what container runtimes and systemd
/// send), logging which. Hand it to the server's graceful shutdown, then shut the runtime
/// down:
///
/// ```no_run
/// # async fn run(listener: tokio::net::TcpListener, xf: xf_core::Xf) -> std::io::Result<()> {
/// use std::time::Duration;
///
/// let workers = xf.spawn_workers(xf_core::runtime::WorkerOptions::new());
/// axum::serve(listener, axum::Router::new().fallback_service(xf_tower::Mounts::new(xf)))
///     .with_graceful_shutdown(xf_tower::shutdown_signal())
///     .await?;
/// workers.shutdown(Duration::from_secs(30)).await;
/// # Ok(())
/// # }
/// ```
///
/// The signals are listened for from the first poll on, so poll it (start the server) before
/// a signal may come.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received: finishing the requests in flight"),
        () = terminate => tracing::info!("SIGTERM received: finishing the requests in flight"),
    }
}
