//! The log's writer thread: request threads hand it log records through a bounded queue, and
//! it renders them and writes them to stderr in batches.
//!
//! A writer thread that blocks on the queue for every line is woken, and writes, once per
//! line: at tens of thousands of requests a second that was a fifth of the server's CPU. This
//! one waits for a line, then lets lines gather for [`LINGER`] (a line arriving meanwhile
//! wakes nobody) and writes all of them with one system call. So a line reaches stderr at
//! most a couple of milliseconds after it was logged, and a busy server makes a few hundred
//! writes a second instead of one per request.
//!
//! The queue is not lossy: when [`QUEUE_LINES`] lines wait, loggers wait for room instead of
//! dropping lines. [`LogQueue::drop`] writes out whatever is queued.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long lines gather after the first one before they are written.
pub const LINGER: Duration = Duration::from_millis(2);

/// Lines the queue holds before loggers wait.
pub const QUEUE_LINES: usize = 64 * 1024;

/// Bytes gathered at most before a write.
const BATCH_BYTES: usize = 256 * 1024;

enum Message<T> {
    Line(T),
    /// Write out what is queued and stop.
    Stop,
}

/// The writer thread; dropping it writes out what is queued and stops the thread.
#[derive(Debug)]
pub struct LogQueue<T> {
    sender: SyncSender<Message<T>>,
    thread: Option<JoinHandle<()>>,
}

/// Where loggers hand their lines: a handle on the queue (cheap to clone).
#[derive(Debug)]
pub struct Sender<T>(SyncSender<Message<T>>);

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender(self.0.clone())
    }
}

impl<T> Sender<T> {
    /// Queues a line, waiting while the queue is full; `false` if the thread has stopped.
    pub fn send(&self, line: T) -> bool {
        self.0.send(Message::Line(line)).is_ok()
    }
}

impl<T: Send + 'static> LogQueue<T> {
    /// Starts the thread writing to `out` (stderr in xf-server) what `render` makes of each
    /// line (appending it to the batch); the sender for the loggers.
    pub fn start(
        out: impl Write + Send + 'static,
        render: impl FnMut(T, &mut Vec<u8>) + Send + 'static,
    ) -> io::Result<(LogQueue<T>, Sender<T>)> {
        let (sender, receiver) = sync_channel(QUEUE_LINES);
        let thread = std::thread::Builder::new()
            .name("xf-server-log".into())
            .spawn(move || write_lines(receiver, out, render))?;
        Ok((
            LogQueue {
                sender: sender.clone(),
                thread: Some(thread),
            },
            Sender(sender),
        ))
    }
}

impl<T> Drop for LogQueue<T> {
    fn drop(&mut self) {
        if self.sender.send(Message::Stop).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// The thread: a batch per wake-up, until told to stop or every sender is gone.
fn write_lines<T>(
    queue: Receiver<Message<T>>,
    mut out: impl Write,
    mut render: impl FnMut(T, &mut Vec<u8>),
) {
    let mut batch: Vec<u8> = Vec::with_capacity(BATCH_BYTES);
    loop {
        let mut stop = match queue.recv() {
            Ok(Message::Line(line)) => {
                render(line, &mut batch);
                false
            }
            Ok(Message::Stop) | Err(_) => true,
        };
        if !stop {
            std::thread::sleep(LINGER);
        }
        loop {
            match queue.try_recv() {
                Ok(Message::Line(line)) => {
                    render(line, &mut batch);
                    if batch.len() >= BATCH_BYTES {
                        write_out(&mut out, &mut batch);
                    }
                }
                Ok(Message::Stop) => stop = true,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    stop = true;
                    break;
                }
            }
        }
        write_out(&mut out, &mut batch);
        if stop {
            return;
        }
    }
}

fn write_out(out: &mut impl Write, batch: &mut Vec<u8>) {
    if !batch.is_empty() {
        // Nowhere to report a failing stderr: the lines are dropped, the server goes on.
        let _ = out.write_all(batch).and_then(|()| out.flush());
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer that keeps what it is given, and how many writes it took.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let mut kept = self.0.lock().unwrap();
            kept.0.extend_from_slice(bytes);
            kept.1 += 1;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn append(line: String, batch: &mut Vec<u8>) {
        batch.extend_from_slice(line.as_bytes());
    }

    #[test]
    fn lines_arrive_in_order_in_few_writes_and_none_is_lost_at_the_end() {
        let kept = Kept::default();
        let (queue, sender) = LogQueue::start(kept.clone(), append).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let sender = sender.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        assert!(sender.send(format!("thread {t} line {i}\n")));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let mut expected: Vec<String> = (0..4)
            .flat_map(|t| (0..5_000).map(move |i| format!("thread {t} line {i}")))
            .collect();
        drop(queue);
        let (bytes, writes) = kept.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        // Every line, whole; each thread's lines in the order it wrote them.
        for t in 0..4 {
            let prefix = format!("thread {t} ");
            let own: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&prefix))
                .collect();
            let wanted: Vec<String> = (0..5_000).map(|i| format!("thread {t} line {i}")).collect();
            assert_eq!(own, wanted);
        }
        lines.sort_unstable();
        expected.sort_unstable();
        assert_eq!(lines, expected);
        assert!(writes < 5_000, "{writes} writes for 20,000 lines");
    }

    #[test]
    fn a_lone_line_is_written_without_waiting_for_more() {
        let kept = Kept::default();
        let (_queue, sender) = LogQueue::start(kept.clone(), append).unwrap();
        assert!(sender.send("alone\n".to_owned()));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while kept.0.lock().unwrap().0.is_empty() {
            assert!(std::time::Instant::now() < deadline, "the line never came");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(kept.0.lock().unwrap().0, b"alone\n");
    }
}
