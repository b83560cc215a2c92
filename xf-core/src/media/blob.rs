//! Where uploaded files live: the [`BlobStore`] seam and its local-directory implementation.
//!
//! A blob is written through a [`BlobWriter`], chunk by chunk as the upload arrives, and
//! becomes visible under its key only when the writer finishes: a writer dropped or aborted
//! half-way leaves nothing behind, so a broken upload never becomes a media item. A finished
//! blob is read back through [`RangeRead`], a range at a time (content inspection reads a few
//! boxes of a multi-GiB video, never all of it).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::Mutex;

pub use super::inspect::RangeRead;

/// Stored files.
#[async_trait]
pub trait BlobStore: Send + Sync + std::fmt::Debug {
    /// Starts a new blob under `key` (replacing any blob of that key once finished).
    async fn create(&self, key: &str) -> io::Result<Box<dyn BlobWriter>>;

    /// The finished blob under `key`; `io::ErrorKind::NotFound` when there is none.
    async fn open(&self, key: &str) -> io::Result<Box<dyn RangeRead>>;

    /// Removes the blob under `key`; a missing one is not an error.
    async fn delete(&self, key: &str) -> io::Result<()>;
}

/// A blob being written.
#[async_trait]
pub trait BlobWriter: Send {
    /// Appends `chunk`.
    async fn write(&mut self, chunk: Bytes) -> io::Result<()>;

    /// Makes the blob visible under its key; its size.
    async fn finish(self: Box<Self>) -> io::Result<u64>;

    /// Drops what was written.
    async fn abort(self: Box<Self>);
}

/// Blobs as files below a directory: `key` is a relative path of `/`-separated segments of
/// letters, digits, `-`, `_` and `.` (never `..`). Writes go to a file in `.partial/` that is
/// renamed into place when finished, which is atomic on one file system.
#[derive(Debug, Clone)]
pub struct LocalBlobStore {
    root: Arc<PathBuf>,
}

impl LocalBlobStore {
    /// The store below `root` (created when missing).
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(root.join(".partial"))?;
        Ok(LocalBlobStore {
            root: Arc::new(root),
        })
    }

    /// The directory blobs live in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &str) -> io::Result<PathBuf> {
        check_key(key)?;
        if key
            .split('/')
            .any(|segment| segment.starts_with(".partial"))
        {
            return Err(not_a_key(key));
        }
        Ok(self.root.join(key))
    }
}

fn not_a_key(key: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{key:?} is not a blob key"),
    )
}

/// Checks that `key` is `/`-separated segments of letters, digits, `-`, `_` and `.`, none of
/// them empty, `.` or `..`: the keys every [`BlobStore`] takes (`InvalidInput` otherwise).
pub fn check_key(key: &str) -> io::Result<()> {
    let valid = !key.is_empty()
        && key.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        });
    if valid {
        Ok(())
    } else {
        Err(not_a_key(key))
    }
}

#[async_trait]
impl BlobStore for LocalBlobStore {
    async fn create(&self, key: &str) -> io::Result<Box<dyn BlobWriter>> {
        let target = self.path_of(key)?;
        let partial = self
            .root
            .join(".partial")
            .join(uuid::Uuid::now_v7().simple().to_string());
        let file = tokio::fs::File::create(&partial).await?.into_std().await;
        Ok(Box::new(LocalWriter::start(file, partial, target)))
    }

    async fn open(&self, key: &str) -> io::Result<Box<dyn RangeRead>> {
        let path = self.path_of(key)?;
        let file = tokio::fs::File::open(&path).await?;
        let len = file.metadata().await?.len();
        Ok(Box::new(LocalReader {
            file: Mutex::new(file),
            len,
        }))
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        match tokio::fs::remove_file(self.path_of(key)?).await {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// The size of the buffers a [`LocalWriter`] hands to its disk thread.
const WRITE_BUFFER: usize = 1 << 20;

/// How many full buffers may wait for the disk: the memory a slow disk can hold up per
/// upload is `(WRITE_QUEUE + 2) * WRITE_BUFFER`.
const WRITE_QUEUE: usize = 2;

/// Writes on a blocking thread of its own, so the network and the disk work at once: the
/// request fills a buffer while the thread writes the previous one. Buffers go back to the
/// writer to be filled again, so a long upload allocates a handful of them in all. (Handing
/// the request's own chunks to the thread instead, without the copy into a buffer, measured
/// slower: many small writes, and the HTTP stack cannot reuse its read buffers.)
struct LocalWriter {
    /// The buffer being filled; full ones go to the disk thread.
    buffer: Vec<u8>,
    /// `None` once finished or aborted.
    full: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    empty: std::sync::mpsc::Receiver<Vec<u8>>,
    disk: Option<tokio::task::JoinHandle<io::Result<()>>>,
    partial: PathBuf,
    target: PathBuf,
    written: u64,
    /// Set once the partial file was renamed into place or removed.
    settled: bool,
}

impl LocalWriter {
    fn start(mut file: std::fs::File, partial: PathBuf, target: PathBuf) -> Self {
        let (full, mut queue) = tokio::sync::mpsc::channel::<Vec<u8>>(WRITE_QUEUE);
        let (recycle, empty) = std::sync::mpsc::channel();
        let disk = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            while let Some(mut buffer) = queue.blocking_recv() {
                file.write_all(&buffer)?;
                buffer.clear();
                // The writer may be gone (finished or aborted); the buffer is then freed.
                let _ = recycle.send(buffer);
            }
            file.sync_data()
        });
        LocalWriter {
            buffer: Vec::with_capacity(WRITE_BUFFER),
            full: Some(full),
            empty,
            disk: Some(disk),
            partial,
            target,
            written: 0,
            settled: false,
        }
    }

    /// Hands the current buffer to the disk thread.
    async fn send(&mut self) -> io::Result<()> {
        let full = self
            .full
            .as_ref()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(WRITE_BUFFER));
        let buffer = std::mem::replace(&mut self.buffer, next);
        if full.send(buffer).await.is_err() {
            // The thread stopped on an error: that error is the answer.
            self.full = None;
            return Err(self
                .join()
                .await
                .err()
                .unwrap_or_else(|| io::Error::other("the disk thread stopped")));
        }
        Ok(())
    }

    /// Waits for the disk thread to write what it was given (and `fsync`).
    async fn join(&mut self) -> io::Result<()> {
        match self.disk.take() {
            None => Err(io::Error::other("the blob is already finished")),
            Some(disk) => disk.await.map_err(io::Error::other)?,
        }
    }
}

#[async_trait]
impl BlobWriter for LocalWriter {
    async fn write(&mut self, chunk: Bytes) -> io::Result<()> {
        self.written += chunk.len() as u64;
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let room = WRITE_BUFFER - self.buffer.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.buffer.extend_from_slice(now);
            rest = later;
            if self.buffer.len() == WRITE_BUFFER {
                self.send().await?;
            }
        }
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> io::Result<u64> {
        if !self.buffer.is_empty() {
            self.send().await?;
        }
        self.full = None;
        self.join().await?;
        if let Some(parent) = self.target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(&self.partial, &self.target).await?;
        self.settled = true;
        Ok(self.written)
    }

    async fn abort(mut self: Box<Self>) {
        self.full = None;
        let _ = self.join().await;
        let _ = tokio::fs::remove_file(&self.partial).await;
        self.settled = true;
    }
}

impl Drop for LocalWriter {
    /// A writer dropped before it finished (the request went away) leaves no file behind;
    /// its thread stops once the queue is empty, writing to a file no longer named.
    fn drop(&mut self) {
        if !self.settled {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

struct LocalReader {
    file: Mutex<tokio::fs::File>,
    len: u64,
}

#[async_trait]
impl RangeRead for LocalReader {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let wanted = (self.len.saturating_sub(offset)).min(len as u64) as usize;
        let mut buffer = vec![0u8; wanted];
        let mut file = self.file.lock().await;
        file.seek(io::SeekFrom::Start(offset)).await?;
        file.read_exact(&mut buffer).await?;
        Ok(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        std::env::temp_dir().join(format!("xf-blob-test-{}", uuid::Uuid::now_v7().simple()))
    }

    #[tokio::test]
    async fn a_blob_appears_only_when_finished() {
        let root = scratch();
        let store = LocalBlobStore::new(&root).unwrap();
        let mut writer = store.create("media/org_1/med_1").await.unwrap();
        writer.write(Bytes::from_static(b"hello ")).await.unwrap();
        assert_eq!(
            store
                .open("media/org_1/med_1")
                .await
                .err()
                .map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
        writer.write(Bytes::from_static(b"world")).await.unwrap();
        assert_eq!(writer.finish().await.unwrap(), 11);
        let blob = store.open("media/org_1/med_1").await.unwrap();
        assert_eq!(blob.len(), 11);
        assert_eq!(blob.read_at(6, 100).await.unwrap(), b"world");
        assert_eq!(blob.read_at(20, 5).await.unwrap(), b"");
        store.delete("media/org_1/med_1").await.unwrap();
        store.delete("media/org_1/med_1").await.unwrap();

        // Aborted and dropped writers leave nothing, not even their partial file.
        let mut aborted = store.create("a").await.unwrap();
        aborted.write(Bytes::from_static(b"x")).await.unwrap();
        aborted.abort().await;
        let mut dropped = store.create("b").await.unwrap();
        dropped.write(Bytes::from_static(b"x")).await.unwrap();
        drop(dropped);
        assert!(store.open("a").await.is_err() && store.open("b").await.is_err());
        assert_eq!(std::fs::read_dir(root.join(".partial")).unwrap().count(), 0);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn chunks_of_any_size_arrive_in_order() {
        let root = scratch();
        let store = LocalBlobStore::new(&root).unwrap();
        // Several buffers' worth, in chunks that straddle the buffers' edges.
        let data: Vec<u8> = (0..(3 * WRITE_BUFFER + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        let mut writer = store.create("big").await.unwrap();
        for chunk in data.chunks(WRITE_BUFFER / 3 + 7) {
            writer.write(Bytes::copy_from_slice(chunk)).await.unwrap();
        }
        writer.write(Bytes::new()).await.unwrap();
        assert_eq!(writer.finish().await.unwrap(), data.len() as u64);
        assert_eq!(std::fs::read(root.join("big")).unwrap(), data);
        assert_eq!(std::fs::read_dir(root.join(".partial")).unwrap().count(), 0);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn keys_stay_below_the_root() {
        let root = scratch();
        let store = LocalBlobStore::new(&root).unwrap();
        for bad in [
            "",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            ".partial/x",
            "a b",
        ] {
            assert_eq!(
                store.create(bad).await.err().map(|e| e.kind()),
                Some(io::ErrorKind::InvalidInput),
                "{bad}"
            );
        }
        std::fs::remove_dir_all(root).unwrap();
    }
}
