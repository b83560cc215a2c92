//! Blobs in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2…): the [`S3BlobStore`]
//! implementation of [`BlobStore`], on the `object_store` crate (feature `s3`).
//!
//! The semantics are those of [`LocalBlobStore`](super::blob::LocalBlobStore):
//! - a blob is written as an S3 multipart upload, a part of [`PART_SIZE`] bytes at a time
//!   with at most [`PARTS_IN_FLIGHT`] parts on their way, so a multi-GiB upload never sits in
//!   memory whole; S3 shows the object only once the upload is completed, which is what
//!   [`BlobWriter::finish`] does;
//! - an aborted writer aborts its multipart upload, which drops the parts already sent; a
//!   writer dropped unfinished leaves no object either, and aborts its upload in a task of
//!   its own when dropped inside a tokio runtime (best effort: a bucket lifecycle rule that
//!   expires incomplete multipart uploads after a day or so catches the rest);
//! - a finished blob is read a range at a time, one ranged `GET` per [`RangeRead::read_at`].
//!
//! Keys are checked as the local store checks them (`/`-separated segments of letters,
//! digits, `-`, `_` and `.`, never `.` or `..`), so the two stores take the same keys.

use std::fmt;
use std::io;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;

use super::blob::{BlobEntry, BlobListing};
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload};
use tokio::task::JoinSet;

use super::blob::{BlobStore, BlobWriter, RangeRead};

/// The size of each part of a multipart upload but the last (S3 wants at least 5 MiB, and
/// allows 10,000 parts: 8 MiB parts make blobs of up to 78 GiB).
pub const PART_SIZE: usize = 8 << 20;

/// How many parts of one upload are sent at once; a writer holds at most this many parts
/// plus the one it is filling.
pub const PARTS_IN_FLIGHT: usize = 2;

/// Where an [`S3BlobStore`] keeps its blobs, and the credentials to get there. Its `Debug`
/// output leaves the secret out.
#[derive(Clone)]
pub struct S3Config {
    /// The service's base URL, e.g. `http://127.0.0.1:9000` for a local MinIO; `None` for
    /// AWS S3 itself (`https://s3.<region>.amazonaws.com`). Requests are path-style
    /// (`<endpoint>/<bucket>/<key>`), which every S3-compatible service understands.
    pub endpoint: Option<String>,
    /// The region, e.g. `us-east-1` (services other than AWS mostly take any value).
    pub region: String,
    /// The bucket, which must exist.
    pub bucket: String,
    /// The access key ID.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// A key prefix inside the bucket, e.g. `xf/prod` to keep blob `media/a` at
    /// `xf/prod/media/a`; empty for none. Leading and trailing `/` are ignored.
    pub prefix: String,
    /// Whether a plain `http://` endpoint is allowed (for a local service); otherwise only
    /// HTTPS is.
    pub allow_http: bool,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("prefix", &self.prefix)
            .field("allow_http", &self.allow_http)
            .finish()
    }
}

/// Blobs as objects in an S3-compatible bucket; see [the module](self) for how.
#[derive(Clone)]
pub struct S3BlobStore {
    store: Arc<dyn ObjectStore>,
    /// Where the store is, for `Debug` and error messages: `s3://bucket` or
    /// `<endpoint>/<bucket>`.
    place: Arc<str>,
    /// The key prefix, as a path (empty for none).
    prefix: Path,
}

impl fmt::Debug for S3BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3BlobStore")
            .field("bucket", &self.place)
            .field("prefix", &self.prefix.as_ref())
            .finish_non_exhaustive()
    }
}

impl S3BlobStore {
    /// The store that `config` describes. Nothing is sent yet: a wrong endpoint, bucket or
    /// credential shows in the first request. Fails (`InvalidInput`) on a malformed prefix
    /// or a configuration the S3 client refuses.
    pub fn new(config: S3Config) -> io::Result<Self> {
        let trimmed = config.prefix.trim_matches('/');
        let prefix = if trimmed.is_empty() {
            Path::default()
        } else {
            if super::blob::check_key(trimmed).is_err() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the S3 key prefix {:?} must be `/`-separated segments of letters, \
                         digits, `-`, `_` and `.`",
                        config.prefix
                    ),
                ));
            }
            trimmed.split('/').collect()
        };
        let mut builder = AmazonS3Builder::new()
            .with_region(&config.region)
            .with_bucket_name(&config.bucket)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(&config.secret_access_key)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(false);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let store = builder.build().map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "cannot set up the S3 client for bucket {:?}: {error}",
                    config.bucket
                ),
            )
        })?;
        let place = match &config.endpoint {
            Some(endpoint) => format!("{}/{}", endpoint.trim_end_matches('/'), config.bucket),
            None => format!("s3://{}", config.bucket),
        };
        Ok(S3BlobStore {
            store: Arc::new(store),
            place: place.into(),
            prefix,
        })
    }

    /// The object path of blob `key`, below the prefix.
    fn location(&self, key: &str) -> io::Result<Path> {
        super::blob::check_key(key)?;
        Ok(key
            .split('/')
            .fold(self.prefix.clone(), |path, segment| path.join(segment)))
    }
}

/// `error` of the S3 request `action` on `location` as an `io::Error` of the matching kind
/// (`NotFound` for a missing object), its message naming the bucket and object.
fn s3_error(place: &str, action: &str, location: &Path, error: object_store::Error) -> io::Error {
    use object_store::Error as E;
    let kind = match &error {
        E::NotFound { .. } => io::ErrorKind::NotFound,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
        E::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
        E::InvalidPath { .. } => io::ErrorKind::InvalidInput,
        E::NotSupported { .. } | E::NotImplemented { .. } => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(
        kind,
        format!("S3 {action} of {place}/{location} failed: {error}"),
    )
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn create(&self, key: &str) -> io::Result<Box<dyn BlobWriter>> {
        let location = self.location(key)?;
        let upload =
            self.store.put_multipart(&location).await.map_err(|error| {
                s3_error(&self.place, "multipart upload start", &location, error)
            })?;
        Ok(Box::new(S3Writer {
            upload: Some(upload),
            parts: JoinSet::new(),
            buffer: Vec::new(),
            written: 0,
            location,
            place: Arc::clone(&self.place),
        }))
    }

    async fn open(&self, key: &str) -> io::Result<Box<dyn RangeRead>> {
        let location = self.location(key)?;
        let meta = self
            .store
            .head(&location)
            .await
            .map_err(|error| s3_error(&self.place, "HEAD", &location, error))?;
        Ok(Box::new(S3Reader {
            store: Arc::clone(&self.store),
            len: meta.size,
            location,
            place: Arc::clone(&self.place),
        }))
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        let location = self.location(key)?;
        match self.store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(s3_error(&self.place, "DELETE", &location, error)),
        }
    }

    async fn list(&self, folder: &str) -> io::Result<BlobListing> {
        super::blob::check_folder(folder)?;
        let location = match folder.strip_suffix('/') {
            Some(key) => self.location(key)?,
            None => self.prefix.clone(),
        };
        let listed = self
            .store
            .list_with_delimiter(Some(&location))
            .await
            .map_err(|error| s3_error(&self.place, "LIST", &location, error))?;
        // Keys are the paths below the prefix; anything that is not a blob key is skipped.
        let key_of = |path: &Path| -> Option<String> {
            let parts: Vec<_> = path.parts().collect();
            let below = parts.get(self.prefix.parts().count()..)?;
            let key = below
                .iter()
                .map(|part| part.as_ref())
                .collect::<Vec<_>>()
                .join("/");
            super::blob::check_key(&key).ok().map(|()| key)
        };
        let mut listing = BlobListing::default();
        for object in &listed.objects {
            if let Some(key) = key_of(&object.location) {
                listing.blobs.push(BlobEntry {
                    key,
                    modified: object.last_modified.into(),
                });
            }
        }
        for common in &listed.common_prefixes {
            if let Some(key) = key_of(common) {
                listing.folders.push(format!("{key}/"));
            }
        }
        Ok(listing)
    }
}

/// A blob being written: a multipart upload fed a part at a time.
struct S3Writer {
    /// `None` once completed, aborted or failed.
    upload: Option<Box<dyn MultipartUpload>>,
    /// The parts on their way, each a task of its own so they go on between two writes.
    parts: JoinSet<object_store::Result<()>>,
    /// The part being filled, less than [`PART_SIZE`] bytes.
    buffer: Vec<u8>,
    written: u64,
    location: Path,
    place: Arc<str>,
}

impl S3Writer {
    fn error(&self, action: &str, error: object_store::Error) -> io::Error {
        s3_error(&self.place, action, &self.location, error)
    }

    /// Sends the buffer as the next part, once fewer than [`PARTS_IN_FLIGHT`] are on their
    /// way (so a fast producer waits for the network rather than filling memory).
    async fn send_part(&mut self) -> io::Result<()> {
        while self.parts.len() >= PARTS_IN_FLIGHT {
            self.join_part().await?;
        }
        let part = std::mem::take(&mut self.buffer);
        let upload = self
            .upload
            .as_mut()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        self.parts.spawn(upload.put_part(PutPayload::from(part)));
        Ok(())
    }

    /// Waits for one part on its way to be stored.
    async fn join_part(&mut self) -> io::Result<()> {
        match self.parts.join_next().await {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(error))) => Err(self.error("part upload", error)),
            Some(Err(error)) => Err(io::Error::other(format!(
                "S3 part upload of {}/{} failed: {error}",
                self.place, self.location
            ))),
        }
    }

    /// Sends the last part, waits for all of them and completes the upload.
    async fn complete(&mut self) -> io::Result<()> {
        if !self.buffer.is_empty() {
            self.send_part().await?;
        }
        while !self.parts.is_empty() {
            self.join_part().await?;
        }
        let upload = self
            .upload
            .as_mut()
            .ok_or_else(|| io::Error::other("the blob is already finished"))?;
        if let Err(error) = upload.complete().await {
            return Err(self.error("multipart upload completion", error));
        }
        self.upload = None;
        Ok(())
    }

    /// Stops the parts on their way and aborts the upload, which drops the parts stored.
    async fn abandon(&mut self) {
        self.parts.shutdown().await;
        self.buffer = Vec::new();
        if let Some(mut upload) = self.upload.take() {
            if let Err(error) = upload.abort().await {
                tracing::warn!(
                    location = %self.location,
                    %error,
                    "could not abort an S3 multipart upload; its parts stay until the bucket's lifecycle rules remove them"
                );
            }
        }
    }
}

#[async_trait]
impl BlobWriter for S3Writer {
    async fn write(&mut self, chunk: Bytes) -> io::Result<()> {
        if self.upload.is_none() {
            return Err(io::Error::other(
                "the blob is already finished, or failed before",
            ));
        }
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            if self.buffer.capacity() == 0 {
                self.buffer.reserve_exact(PART_SIZE);
            }
            let take = (PART_SIZE - self.buffer.len()).min(rest.len());
            self.buffer.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.buffer.len() == PART_SIZE {
                if let Err(error) = self.send_part().await {
                    self.abandon().await;
                    return Err(error);
                }
            }
        }
        self.written += chunk.len() as u64;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> io::Result<u64> {
        if self.upload.is_none() {
            return Err(io::Error::other(
                "the blob is already finished, or failed before",
            ));
        }
        match self.complete().await {
            Ok(()) => Ok(self.written),
            Err(error) => {
                self.abandon().await;
                Err(error)
            }
        }
    }

    async fn abort(mut self: Box<Self>) {
        self.abandon().await;
    }
}

impl Drop for S3Writer {
    /// A writer dropped unfinished (the request went away) never shows as an object; its
    /// upload is aborted in a task of its own when there is a runtime to run one.
    fn drop(&mut self) {
        let Some(mut upload) = self.upload.take() else {
            return;
        };
        let mut parts = std::mem::take(&mut self.parts);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let location = self.location.clone();
                runtime.spawn(async move {
                    parts.shutdown().await;
                    if let Err(error) = upload.abort().await {
                        tracing::warn!(
                            %location,
                            %error,
                            "could not abort the S3 multipart upload of a dropped blob writer"
                        );
                    }
                });
            }
            Err(_) => tracing::warn!(
                location = %self.location,
                "a blob writer was dropped outside a tokio runtime; its S3 multipart upload \
                 stays until the bucket's lifecycle rules remove it"
            ),
        }
    }
}

/// A finished blob, read with ranged `GET`s.
struct S3Reader {
    store: Arc<dyn ObjectStore>,
    len: u64,
    location: Path,
    place: Arc<str>,
}

#[async_trait]
impl RangeRead for S3Reader {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let end = offset.saturating_add(len as u64).min(self.len);
        if offset >= end {
            return Ok(Vec::new());
        }
        let bytes = self
            .store
            .get_range(&self.location, offset..end)
            .await
            .map_err(|error| s3_error(&self.place, "ranged GET", &self.location, error))?;
        Ok(Vec::from(bytes))
    }
}
