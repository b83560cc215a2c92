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

    /// One level of the blobs below `folder` (`""` for the top, else a key prefix ending in
    /// `/`): the finished blobs right in it and the folders one level down, as `S3`'s
    /// `ListObjectsV2` with a `/` delimiter gives them. What [`Xf::sweep_blobs`] walks.
    ///
    /// [`Xf::sweep_blobs`]: crate::Xf::sweep_blobs
    async fn list(&self, folder: &str) -> io::Result<BlobListing>;

    /// Removes what writers that died left half-written; how many. Stores whose unfinished
    /// writes expire by themselves (an S3 bucket's lifecycle rule) have nothing to do.
    async fn clean_partials(&self) -> io::Result<usize> {
        Ok(0)
    }
}

/// A [`BlobStore`] that counts the failures of the one it wraps in the metrics
/// (`xf_blob_errors`, by operation); the facade wraps whichever store the host gave it.
#[derive(Debug)]
pub(crate) struct Observed {
    pub inner: Arc<dyn BlobStore>,
    pub metrics: crate::metrics::Metrics,
}

impl Observed {
    /// `result`, counted when it failed; a blob that is not there is an answer (a link to a
    /// deleted item), not a failure of the store.
    fn counted<T>(&self, operation: &'static str, result: io::Result<T>) -> io::Result<T> {
        if result
            .as_ref()
            .is_err_and(|e| e.kind() != io::ErrorKind::NotFound)
        {
            self.metrics.blob_error(operation);
        }
        result
    }
}

#[async_trait]
impl BlobStore for Observed {
    async fn create(&self, key: &str) -> io::Result<Box<dyn BlobWriter>> {
        self.counted("create", self.inner.create(key).await)
    }

    async fn open(&self, key: &str) -> io::Result<Box<dyn RangeRead>> {
        self.counted("open", self.inner.open(key).await)
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        self.counted("delete", self.inner.delete(key).await)
    }

    async fn list(&self, folder: &str) -> io::Result<BlobListing> {
        self.counted("list", self.inner.list(folder).await)
    }

    async fn clean_partials(&self) -> io::Result<usize> {
        self.counted("clean_partials", self.inner.clean_partials().await)
    }
}

/// One level of a [`BlobStore`]'s folders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobListing {
    /// The finished blobs in the folder.
    pub blobs: Vec<BlobEntry>,
    /// The folders in it, each a key prefix ending in `/`.
    pub folders: Vec<String>,
}

/// A finished blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// Its key.
    pub key: String,
    /// When it was last written.
    pub modified: std::time::SystemTime,
}

/// Checks that `folder` is `""` or a key followed by `/`.
pub fn check_folder(folder: &str) -> io::Result<()> {
    match folder.strip_suffix('/') {
        None if folder.is_empty() => Ok(()),
        Some(key) => check_key(key),
        None => Err(not_a_key(folder)),
    }
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
///
/// On Linux the partial file is written with direct I/O (`O_DIRECT`) where the file system
/// takes it: a large upload then goes from the writer's buffers to the disk without being
/// copied into the page cache first, which saves most of the CPU an upload costs and keeps
/// uploads from crowding other files out of the cache. Where the file system refuses it
/// (tmpfs on older kernels, some network and FUSE file systems), the file is written as usual.
///
/// Each store writes its partial files in a directory of its own, `.partial/{id}/`, next to
/// a lock file `.partial/{id}.lock` it holds locked while it lives. Partial files of a
/// process that died (its lock is free) are removed when a store opens the directory and by
/// [`BlobStore::clean_partials`], which the runtime's purge calls; those of a live process,
/// even on another machine sharing the directory, are left alone.
#[derive(Debug, Clone)]
pub struct LocalBlobStore {
    root: Arc<PathBuf>,
    partials: Arc<PartialDir>,
}

/// This store's directory of partial files, removed with the store.
#[derive(Debug)]
struct PartialDir {
    path: PathBuf,
    lock_path: PathBuf,
    /// Held locked while the store lives.
    _lock: std::fs::File,
}

impl std::ops::Deref for PartialDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl Drop for PartialDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

impl LocalBlobStore {
    /// The store below `root` (created when missing). Partial files that dead processes
    /// left are removed.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        let partial_root = root.join(".partial");
        std::fs::create_dir_all(&partial_root)?;
        let id = uuid::Uuid::now_v7().simple().to_string();
        let lock_path = partial_root.join(format!("{id}.lock"));
        let lock = std::fs::File::create(&lock_path)?;
        lock.try_lock().map_err(io::Error::other)?;
        let path = partial_root.join(&id);
        std::fs::create_dir(&path)?;
        let store = LocalBlobStore {
            root: Arc::new(root),
            partials: Arc::new(PartialDir {
                path,
                lock_path,
                _lock: lock,
            }),
        };
        let removed = store.remove_dead_partials()?;
        if removed > 0 {
            tracing::info!(removed, "removed the partial files of stopped processes");
        }
        Ok(store)
    }

    /// The directory blobs live in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes what `.partial/` holds that no live store owns: the directories of stores
    /// whose lock is free, and loose files (and lock files without a directory) older than
    /// an hour. How many files were removed.
    fn remove_dead_partials(&self) -> io::Result<usize> {
        let partial_root = self.root.join(".partial");
        let mut removed = 0;
        for entry in std::fs::read_dir(&partial_root)? {
            let entry = entry?;
            let path = entry.path();
            if path == self.partials.path || path == self.partials.lock_path {
                continue;
            }
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                let lock_path = path.with_extension("lock");
                let owner_alive = match std::fs::File::open(&lock_path) {
                    Ok(lock) => lock.try_lock().is_err(),
                    // No lock file: made by an older version, or its owner is being removed.
                    Err(_) => is_older_than(&path, LOOSE_PARTIAL_AGE),
                };
                if owner_alive {
                    continue;
                }
                removed += std::fs::read_dir(&path).map_or(0, Iterator::count);
                let _ = std::fs::remove_dir_all(&path);
                let _ = std::fs::remove_file(&lock_path);
            } else if is_older_than(&path, LOOSE_PARTIAL_AGE) {
                let locked_by_live_owner = path.extension().is_some_and(|e| e == "lock")
                    && std::fs::File::open(&path).is_ok_and(|lock| lock.try_lock().is_err());
                if !locked_by_live_owner && std::fs::remove_file(&path).is_ok() {
                    removed += usize::from(path.extension().is_none_or(|e| e != "lock"));
                }
            }
        }
        Ok(removed)
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

/// How old a file in `.partial/` that no store's directory holds must be before it is
/// removed.
const LOOSE_PARTIAL_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

fn is_older_than(path: &Path, age: std::time::Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|elapsed| elapsed > age)
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
            .partials
            .join(uuid::Uuid::now_v7().simple().to_string());
        let (partial, file) = PartialFile::create(partial)?;
        let file = DiskFile::new(file, partial.path.clone());
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

    async fn list(&self, folder: &str) -> io::Result<BlobListing> {
        check_folder(folder)?;
        if folder
            .split('/')
            .any(|segment| segment.starts_with(".partial"))
        {
            return Err(not_a_key(folder));
        }
        let directory = self.root.join(folder);
        let folder = folder.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut listing = BlobListing::default();
            let entries = match std::fs::read_dir(&directory) {
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(listing),
                other => other?,
            };
            for entry in entries {
                let entry = entry?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let key = format!("{folder}{name}");
                // Not a blob's name (`.partial`, a file a person put there): not ours to touch.
                if check_key(&key).is_err() || name.starts_with(".partial") {
                    continue;
                }
                let metadata = entry.metadata()?;
                if metadata.is_dir() {
                    listing.folders.push(format!("{key}/"));
                } else if metadata.is_file() {
                    listing.blobs.push(BlobEntry {
                        key,
                        modified: metadata.modified()?,
                    });
                }
            }
            listing.blobs.sort_by(|a, b| a.key.cmp(&b.key));
            listing.folders.sort();
            Ok(listing)
        })
        .await
        .map_err(io::Error::other)?
    }

    async fn clean_partials(&self) -> io::Result<usize> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.remove_dead_partials())
            .await
            .map_err(io::Error::other)?
    }
}

/// The size of the buffers a [`LocalWriter`] fills.
const WRITE_BUFFER: usize = 1 << 20;

/// What direct I/O needs aligned to it: the buffers' addresses, the writes' lengths and the
/// file offsets they start at (the page size, a multiple of every disk's logical block).
const DIRECT_ALIGN: usize = 4096;

/// A [`WRITE_BUFFER`] whose bytes start at a [`DIRECT_ALIGN`] boundary of its allocation,
/// so it can be written with direct I/O. Allocated when first filled.
struct AlignedBuffer {
    /// Empty until first filled.
    bytes: Vec<u8>,
    /// Where the aligned bytes start in `bytes`.
    start: usize,
    /// How many are filled.
    len: usize,
}

impl AlignedBuffer {
    fn new() -> Self {
        AlignedBuffer {
            bytes: Vec::new(),
            start: 0,
            len: 0,
        }
    }

    fn room(&self) -> usize {
        WRITE_BUFFER - self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `data`, which fits in [`AlignedBuffer::room`].
    fn extend(&mut self, data: &[u8]) {
        if self.bytes.is_empty() {
            self.bytes = vec![0u8; WRITE_BUFFER + DIRECT_ALIGN];
            let address = self.bytes.as_ptr() as usize;
            self.start = (DIRECT_ALIGN - address % DIRECT_ALIGN) % DIRECT_ALIGN;
        }
        let at = self.start + self.len;
        self.bytes[at..at + data.len()].copy_from_slice(data);
        self.len += data.len();
    }

    fn filled(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }

    /// The filled bytes and zeros after them up to a multiple of [`DIRECT_ALIGN`].
    fn padded(&mut self) -> &[u8] {
        let padded = self.len.next_multiple_of(DIRECT_ALIGN);
        self.bytes[self.start + self.len..self.start + padded].fill(0);
        &self.bytes[self.start..self.start + padded]
    }

    fn clear(&mut self) {
        self.len = 0;
    }
}

/// Opens a new partial file for writing: with direct I/O where the platform and the file
/// system have it.
fn create_partial(path: &Path) -> io::Result<(std::fs::File, bool)> {
    let mut options = std::fs::File::options();
    options.write(true).create(true).truncate(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut direct = options.clone();
        direct.custom_flags(libc::O_DIRECT);
        match direct.open(path) {
            // A file system without direct I/O refuses the flag with `EINVAL`.
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => {}
            other => return other.map(|file| (file, true)),
        }
    }
    options.open(path).map(|file| (file, false))
}

/// A partial file and how it is written: directly, in aligned blocks, until a write is
/// refused or the last short block comes; then through the page cache.
struct DiskFile {
    file: std::fs::File,
    path: PathBuf,
    direct: bool,
    /// Bytes written so far: where the next write starts.
    written: u64,
}

impl DiskFile {
    fn new((file, direct): (std::fs::File, bool), path: PathBuf) -> Self {
        DiskFile {
            file,
            path,
            direct,
            written: 0,
        }
    }

    /// Appends the buffer's bytes. A short buffer (the last) is written directly padded to
    /// the alignment, and the file cut back to its size.
    fn write(&mut self, buffer: &mut AlignedBuffer) -> io::Result<()> {
        use std::io::{Seek, Write};
        let len = buffer.len as u64;
        if self.direct {
            let short = !buffer.len.is_multiple_of(DIRECT_ALIGN);
            match self.file.write_all(buffer.padded()) {
                Ok(()) => {
                    self.written += len;
                    if short {
                        self.file.set_len(self.written)?;
                        // Any later write is unaligned: it goes through the page cache.
                        self.buffered()?;
                    }
                    return Ok(());
                }
                // Opened with the flag but refused at the write (some FUSE and network
                // file systems): the same bytes again, through the page cache, over whatever
                // part of the refused write got through.
                Err(error) if error.kind() == io::ErrorKind::InvalidInput => {
                    self.buffered()?;
                    self.file.set_len(self.written)?;
                }
                Err(error) => return Err(error),
            }
        }
        self.file.seek(io::SeekFrom::Start(self.written))?;
        self.file.write_all(buffer.filled())?;
        self.written += len;
        Ok(())
    }

    /// Goes on through the page cache, on a descriptor of the same file without the flag.
    fn buffered(&mut self) -> io::Result<()> {
        self.file = std::fs::File::options().write(true).open(&self.path)?;
        self.direct = false;
        Ok(())
    }
}

/// A partial file's path, removed when dropped unless it was renamed into place: a writer
/// dropped half-way (the request went away) leaves nothing behind.
struct PartialFile {
    path: PathBuf,
    settled: bool,
}

impl PartialFile {
    /// Makes the file where the call is, as dropping it removes it there: one short system
    /// call each, with no wait between making the file and owning it (so no cancelled
    /// `create` can leave it behind) and no blocking thread taken per upload that starts (a
    /// burst of them would grow the blocking pool).
    fn create(path: PathBuf) -> io::Result<(Self, (std::fs::File, bool))> {
        let file = create_partial(&path)?;
        Ok((
            PartialFile {
                path,
                settled: false,
            },
            file,
        ))
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.settled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// How many full buffers may wait for the disk: the memory a slow disk can hold up per
/// upload is `(WRITE_QUEUE + 2) * WRITE_BUFFER`.
const WRITE_QUEUE: usize = 2;

/// Writes on a task of its own, so the network and the disk work at once: the request fills
/// a buffer while the task writes the previous one. The task holds a blocking thread only
/// while it has buffers to write ([`write_while_queued`]), so an upload that trickles in
/// holds no thread between its writes (and only the memory it has sent). Buffers go back to
/// the writer to be filled again, so a long upload allocates a handful of them in all; they
/// are aligned for the direct I/O of a [`DiskFile`]. (Handing the request's own chunks to the
/// task instead, without the copy, measured slower: many small writes, and the HTTP stack
/// cannot reuse its read buffers.)
struct LocalWriter {
    /// The buffer being filled; full ones go to the disk task.
    buffer: AlignedBuffer,
    /// `None` once finished or aborted.
    full: Option<tokio::sync::mpsc::Sender<AlignedBuffer>>,
    empty: std::sync::mpsc::Receiver<AlignedBuffer>,
    disk: Option<tokio::task::JoinHandle<io::Result<()>>>,
    partial: PartialFile,
    target: PathBuf,
    written: u64,
}

impl LocalWriter {
    fn start(file: DiskFile, partial: PartialFile, target: PathBuf) -> Self {
        let (full, mut queue) = tokio::sync::mpsc::channel::<AlignedBuffer>(WRITE_QUEUE);
        let (mut recycle, empty) = std::sync::mpsc::channel();
        let disk = tokio::spawn(async move {
            let mut file = file;
            while let Some(first) = queue.recv().await {
                // The file and both channels go to the blocking thread and come back with it.
                let written;
                (file, queue, recycle, written) = tokio::task::spawn_blocking(move || {
                    let written = write_while_queued(&mut file, first, &mut queue, &recycle);
                    (file, queue, recycle, written)
                })
                .await
                .map_err(io::Error::other)?;
                written?;
            }
            tokio::task::spawn_blocking(move || file.file.sync_data())
                .await
                .map_err(io::Error::other)?
        });
        LocalWriter {
            buffer: AlignedBuffer::new(),
            full: Some(full),
            empty,
            disk: Some(disk),
            partial,
            target,
            written: 0,
        }
    }

    /// Hands the current buffer to the disk task.
    async fn send(&mut self) -> io::Result<()> {
        let full = self
            .full
            .as_ref()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| AlignedBuffer::new());
        let buffer = std::mem::replace(&mut self.buffer, next);
        if full.send(buffer).await.is_err() {
            // The task stopped on an error: that error is the answer.
            self.full = None;
            return Err(self
                .join()
                .await
                .err()
                .unwrap_or_else(|| io::Error::other("the disk task stopped")));
        }
        Ok(())
    }

    /// Waits for the disk task to write what it was given (and `fsync`).
    async fn join(&mut self) -> io::Result<()> {
        match self.disk.take() {
            None => Err(io::Error::other("the blob is already finished")),
            Some(disk) => disk.await.map_err(io::Error::other)?,
        }
    }
}

/// Writes `first`, then every buffer the request has queued meanwhile, on the blocking thread
/// it runs on: one trip to the thread for as long as buffers keep coming, so the disk is not
/// left idle between writes while the next buffer is handed over. Each buffer goes back to
/// the writer as soon as it is written. Returns once the queue is empty, so an upload that
/// trickles in holds the thread only while a write lasts.
fn write_while_queued(
    file: &mut DiskFile,
    first: AlignedBuffer,
    queue: &mut tokio::sync::mpsc::Receiver<AlignedBuffer>,
    recycle: &std::sync::mpsc::Sender<AlignedBuffer>,
) -> io::Result<()> {
    let mut next = Some(first);
    while let Some(mut buffer) = next {
        file.write(&mut buffer)?;
        buffer.clear();
        // The writer may be gone (finished or aborted); the buffer is then freed.
        let _ = recycle.send(buffer);
        next = queue.try_recv().ok();
    }
    Ok(())
}

#[async_trait]
impl BlobWriter for LocalWriter {
    async fn write(&mut self, chunk: Bytes) -> io::Result<()> {
        self.written += chunk.len() as u64;
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let (now, later) = rest.split_at(self.buffer.room().min(rest.len()));
            self.buffer.extend(now);
            rest = later;
            if self.buffer.room() == 0 {
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
        tokio::fs::rename(&self.partial.path, &self.target).await?;
        self.partial.settled = true;
        Ok(self.written)
    }

    async fn abort(mut self: Box<Self>) {
        self.full = None;
        if let Some(disk) = self.disk.take() {
            // What was queued is not worth writing; the partial file goes with the guard.
            disk.abort();
            let _ = disk.await;
        }
    }
}

impl Drop for LocalWriter {
    /// A writer dropped before it finished (the request went away) stops its task; the
    /// partial file goes with its guard.
    fn drop(&mut self) {
        if let Some(disk) = self.disk.take() {
            disk.abort();
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
        assert_eq!(std::fs::read_dir(&store.partials.path).unwrap().count(), 0);
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
        assert_eq!(std::fs::read_dir(&store.partials.path).unwrap().count(), 0);
        std::fs::remove_dir_all(root).unwrap();
    }

    /// Writes buffers of `sizes` through a [`DiskFile`], directly if `direct` (and the file
    /// system takes it), and reads the file back.
    fn written_through_a_disk_file(direct: bool, sizes: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let root = scratch();
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("partial");
        let opened = if direct {
            create_partial(&path).unwrap()
        } else {
            (std::fs::File::create(&path).unwrap(), false)
        };
        let mut file = DiskFile::new(opened, path.clone());
        let mut expected = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let data: Vec<u8> = (0..size).map(|j| (i * 7 + j % 253) as u8).collect();
            let mut buffer = AlignedBuffer::new();
            buffer.extend(&data);
            file.write(&mut buffer).unwrap();
            expected.extend_from_slice(&data);
        }
        file.file.sync_data().unwrap();
        let read = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(root).unwrap();
        (read, expected)
    }

    #[test]
    fn disk_files_hold_what_was_written_directly_or_not() {
        // Full buffers, the short last one, and (which the writer never sends, but the file
        // takes) more after a short one, where the direct file goes on through the cache.
        let sizes = [WRITE_BUFFER, 5_000, DIRECT_ALIGN, 300, WRITE_BUFFER, 0, 1];
        for direct in [true, false] {
            let (read, expected) = written_through_a_disk_file(direct, &sizes);
            assert!(read == expected, "direct: {direct}");
        }
        #[cfg(target_os = "linux")]
        {
            // Where the tests run (not tmpfs on an old kernel), the flag is taken.
            let root = scratch();
            std::fs::create_dir_all(&root).unwrap();
            let (_, direct) = create_partial(&root.join("p")).unwrap();
            std::fs::remove_dir_all(root).unwrap();
            assert!(direct, "the test directory's file system refused O_DIRECT");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_direct_write_is_made_through_the_page_cache() {
        use std::io::Seek;
        let root = scratch();
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("partial");
        let (mut file, direct) = create_partial(&path).unwrap();
        assert!(direct);
        // From an unaligned position the kernel refuses a direct write with `EINVAL`, as a
        // file system that takes the flag but not the writes does.
        file.seek(io::SeekFrom::Start(1)).unwrap();
        let mut disk = DiskFile::new((file, true), path.clone());
        let data: Vec<u8> = (0..WRITE_BUFFER + 300).map(|i| (i % 241) as u8).collect();
        for piece in [&data[..WRITE_BUFFER], &data[WRITE_BUFFER..]] {
            let mut buffer = AlignedBuffer::new();
            buffer.extend(piece);
            disk.write(&mut buffer).unwrap();
        }
        assert!(!disk.direct);
        disk.file.sync_data().unwrap();
        assert!(std::fs::read(&path).unwrap() == data);
        std::fs::remove_dir_all(root).unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn disk_files_hold_any_run_of_buffers(
            direct in proptest::bool::ANY,
            sizes in proptest::collection::vec(0usize..3 * DIRECT_ALIGN + 9, 0..6),
        ) {
            let (read, expected) = written_through_a_disk_file(direct, &sizes);
            proptest::prop_assert!(read == expected);
        }
    }

    #[tokio::test]
    async fn a_create_cancelled_while_its_file_is_made_leaves_nothing() {
        let root = scratch();
        let store = LocalBlobStore::new(&root).unwrap();
        for _ in 0..20 {
            // Cut off at its first wait, or dropped as soon as it is made.
            let _ = tokio::time::timeout(std::time::Duration::ZERO, store.create("c")).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(std::fs::read_dir(&store.partials.path).unwrap().count(), 0);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn partial_files_of_dead_stores_go_and_live_ones_stay() {
        let root = scratch();
        let live = LocalBlobStore::new(&root).unwrap();
        let mut writing = live.create("a").await.unwrap();
        writing.write(Bytes::from_static(b"half")).await.unwrap();
        // What a process that died left: its directory, its (unlocked) lock file.
        let dead = root.join(".partial").join("0190dead");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("x"), b"left").unwrap();
        std::fs::write(root.join(".partial").join("0190dead.lock"), b"").unwrap();
        // A loose file of an older layout, old enough to go, and a fresh one that stays.
        let loose = root.join(".partial").join("loose");
        std::fs::write(&loose, b"old").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&loose)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - 2 * LOOSE_PARTIAL_AGE)
            .unwrap();
        std::fs::write(root.join(".partial").join("fresh"), b"new").unwrap();

        let other = LocalBlobStore::new(&root).unwrap();
        assert!(!dead.exists() && !loose.exists());
        assert!(root.join(".partial").join("fresh").exists());
        // The live store's partial file is untouched, by the new store and by a purge.
        assert_eq!(other.clean_partials().await.unwrap(), 0);
        assert_eq!(std::fs::read_dir(&live.partials.path).unwrap().count(), 1);
        assert_eq!(writing.finish().await.unwrap(), 4);
        // A store that is dropped takes its directory and lock file along.
        let (path, lock) = (
            other.partials.path.clone(),
            other.partials.lock_path.clone(),
        );
        drop(other);
        assert!(!path.exists() && !lock.exists());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[tokio::test]
    async fn listings_give_one_level_of_blobs_and_folders() {
        let root = scratch();
        let store = LocalBlobStore::new(&root).unwrap();
        for key in ["media/o1/a.mp4", "media/o1/b.png", "media/o2/c.mp4", "top"] {
            let mut writer = store.create(key).await.unwrap();
            writer.write(Bytes::from_static(b"x")).await.unwrap();
            writer.finish().await.unwrap();
        }
        let top = store.list("").await.unwrap();
        assert_eq!(top.folders, ["media/"]);
        assert_eq!(
            top.blobs.iter().map(|b| b.key.as_str()).collect::<Vec<_>>(),
            ["top"]
        );
        assert_eq!(
            store.list("media/").await.unwrap().folders,
            ["media/o1/", "media/o2/"]
        );
        let o1 = store.list("media/o1/").await.unwrap();
        assert_eq!(
            o1.blobs.iter().map(|b| b.key.as_str()).collect::<Vec<_>>(),
            ["media/o1/a.mp4", "media/o1/b.png"]
        );
        assert!(o1.blobs[0].modified <= std::time::SystemTime::now());
        assert_eq!(store.list("none/").await.unwrap(), BlobListing::default());
        for bad in ["media", "../", ".partial/", "/"] {
            assert!(store.list(bad).await.is_err(), "{bad}");
        }
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
