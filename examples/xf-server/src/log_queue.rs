//! The log's writer thread: request threads hand it formatted lines through a bounded queue,
//! and it writes them to stderr in batches.
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

enum Message {
    Line(Vec<u8>),
    /// Write out what is queued and stop.
    Stop,
}

/// The writer thread; dropping it writes out what is queued and stops the thread.
#[derive(Debug)]
pub struct LogQueue {
    sender: SyncSender<Message>,
    thread: Option<JoinHandle<()>>,
}

/// What the subscriber writes lines to: a handle on the queue (cheap to clone).
#[derive(Debug, Clone)]
pub struct QueueWriter(SyncSender<Message>);

impl LogQueue {
    /// Starts the thread writing to `out` (stderr in xf-server); the writer for the
    /// subscriber.
    pub fn start(out: impl Write + Send + 'static) -> io::Result<(LogQueue, QueueWriter)> {
        let (sender, receiver) = sync_channel(QUEUE_LINES);
        let thread = std::thread::Builder::new()
            .name("xf-server-log".into())
            .spawn(move || write_lines(receiver, out))?;
        Ok((
            LogQueue {
                sender: sender.clone(),
                thread: Some(thread),
            },
            QueueWriter(sender),
        ))
    }
}

impl Drop for LogQueue {
    fn drop(&mut self) {
        if self.sender.send(Message::Stop).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// The thread: a batch per wake-up, until told to stop or every sender is gone.
fn write_lines(queue: Receiver<Message>, mut out: impl Write) {
    let mut batch: Vec<u8> = Vec::with_capacity(BATCH_BYTES);
    loop {
        let mut stop = match queue.recv() {
            Ok(Message::Line(line)) => {
                batch.extend_from_slice(&line);
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
                    batch.extend_from_slice(&line);
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

impl Write for QueueWriter {
    /// The subscriber writes each formatted line with one call.
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        self.0
            .send(Message::Line(line.to_vec()))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the log thread stopped"))?;
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for QueueWriter {
    type Writer = QueueWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
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

    #[test]
    fn lines_arrive_in_order_in_few_writes_and_none_is_lost_at_the_end() {
        let kept = Kept::default();
        let (queue, writer) = LogQueue::start(kept.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        writer
                            .write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
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
        let (_queue, mut writer) = LogQueue::start(kept.clone()).unwrap();
        writer.write_all(b"alone\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while kept.0.lock().unwrap().0.is_empty() {
            assert!(std::time::Instant::now() < deadline, "the line never came");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(kept.0.lock().unwrap().0, b"alone\n");
    }
}
