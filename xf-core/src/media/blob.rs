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
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
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
    async fn write(&mut self, chunk: &[u8]) -> io::Result<()>;

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
        let file = tokio::fs::File::create(&partial).await?;
        Ok(Box::new(LocalWriter {
            file: Some(tokio::io::BufWriter::with_capacity(1 << 20, file)),
            partial,
            target,
            written: 0,
        }))
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

struct LocalWriter {
    /// `None` once finished or aborted.
    file: Option<tokio::io::BufWriter<tokio::fs::File>>,
    partial: PathBuf,
    target: PathBuf,
    written: u64,
}

#[async_trait]
impl BlobWriter for LocalWriter {
    async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        file.write_all(chunk).await?;
        self.written += chunk.len() as u64;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> io::Result<u64> {
        let mut file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        file.flush().await?;
        file.get_mut().sync_data().await?;
        drop(file);
        if let Some(parent) = self.target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(&self.partial, &self.target).await?;
        Ok(self.written)
    }

    async fn abort(mut self: Box<Self>) {
        self.file.take();
        let _ = tokio::fs::remove_file(&self.partial).await;
    }
}

impl Drop for LocalWriter {
    /// A writer dropped before it finished (the request went away) leaves no file behind.
    fn drop(&mut self) {
        if self.file.take().is_some() {
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
        writer.write(b"hello ").await.unwrap();
        assert_eq!(
            store
                .open("media/org_1/med_1")
                .await
                .err()
                .map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
        writer.write(b"world").await.unwrap();
        assert_eq!(writer.finish().await.unwrap(), 11);
        let blob = store.open("media/org_1/med_1").await.unwrap();
        assert_eq!(blob.len(), 11);
        assert_eq!(blob.read_at(6, 100).await.unwrap(), b"world");
        assert_eq!(blob.read_at(20, 5).await.unwrap(), b"");
        store.delete("media/org_1/med_1").await.unwrap();
        store.delete("media/org_1/med_1").await.unwrap();

        // Aborted and dropped writers leave nothing, not even their partial file.
        let mut aborted = store.create("a").await.unwrap();
        aborted.write(b"x").await.unwrap();
        aborted.abort().await;
        let mut dropped = store.create("b").await.unwrap();
        dropped.write(b"x").await.unwrap();
        drop(dropped);
        assert!(store.open("a").await.is_err() && store.open("b").await.is_err());
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
