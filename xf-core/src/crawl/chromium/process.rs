//! A headless Chromium that xf starts: its flags, its DevTools address, and its end.
//!
//! The browser runs in a process group of its own with a profile directory of its own, and
//! is killed (the whole group: the browser and its renderer, GPU and zygote processes) when
//! its [`Launched`] is dropped; the directory goes with it. Its standard error is read to the
//! end, so a chatty browser never blocks on a full pipe.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a browser may take to print its DevTools address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The flags of every browser xf starts: headless, no first-run work, no background
/// networking of its own (updates, sync, safe browsing, metrics), no audio, no GPU, a
/// DevTools port the system picks, and WebRTC kept from sending UDP around the network
/// rules.
const FLAGS: &[&str] = &[
    "--headless",
    "--remote-debugging-port=0",
    "--remote-debugging-address=127.0.0.1",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-component-update",
    "--disable-background-networking",
    "--disable-default-apps",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    // Local Network Access (public pages asking for private addresses) is xf's egress rule
    // to decide, not the browser's: the documents come from xf, so the browser knows no
    // address of theirs and would judge every one public.
    "--disable-features=Translate,MediaRouter,OptimizationHints,InterestFeedContentSuggestions,LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights",
    "--metrics-recording-only",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
];

/// A running browser xf started.
#[derive(Debug)]
pub(super) struct Launched {
    child: Child,
    profile: PathBuf,
    /// Its DevTools address.
    pub endpoint: String,
}

impl Launched {
    /// Starts the browser at `path` with a new profile in `profiles`, and waits for its
    /// DevTools address.
    pub async fn start(path: &Path, profiles: &Path) -> Result<Launched, String> {
        let profile = profiles.join(format!("xf-chromium-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&profile)
            .map_err(|e| format!("could not make {}: {e}", profile.display()))?;
        let mut command = Command::new(path);
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        // Chromium's sandbox needs user namespaces and refuses to run as root; a root xf
        // (containers, CI) runs it without, as every headless deployment as root does.
        if running_as_root() {
            command.arg("--no-sandbox");
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(format!("could not start {}: {error}", path.display()));
            }
        };
        let Some(stderr) = child.stderr.take() else {
            return Err("the browser's standard error was not captured".into());
        };
        let mut launched = Launched {
            child,
            profile,
            endpoint: String::new(),
        };
        let mut lines = BufReader::new(stderr).lines();
        let found = tokio::time::timeout(START_TIMEOUT, async {
            let mut said = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("ws://") {
                    return Ok(line[at..].trim().to_owned());
                }
                if said.len() < 5 {
                    said.push(line);
                }
            }
            Err(format!(
                "it exited without a DevTools address: {}",
                said.join(" / ")
            ))
        })
        .await;
        match found {
            Ok(Ok(endpoint)) => launched.endpoint = endpoint,
            Ok(Err(why)) => return Err(why),
            Err(_) => return Err(format!("no DevTools address within {START_TIMEOUT:?}")),
        }
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "xf::chromium", "{line}");
            }
        });
        Ok(launched)
    }

    /// The browser's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            kill_group(pid);
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Whether this process runs as root (its `/proc/self` belongs to uid 0).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// Kills the process group `pid` leads (the browser and every process it started), with
/// `kill(1)`: the workspace has no unsafe code, and the standard library signals one process
/// only.
fn kill_group(pid: u32) {
    let killed = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if let Err(error) = killed {
        tracing::warn!(%error, pid, "could not kill the browser's process group");
    }
}
