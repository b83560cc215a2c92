//! Resumable uploads (tus 1.0.0 with the creation, creation-with-upload, expiration,
//! termination and checksum extensions): creating an upload, appending chunks, reading its
//! offset, terminating it, and assembling a finished one into a media item's file.
//!
//! Each chunk is stored as a blob of its own and added to the upload by one conditional
//! store write on the upload's offset, so two requests at one offset never both count. A
//! chunk whose body breaks off, or whose checksum does not match, is dropped whole: the
//! client asks for the offset (`HEAD`) and sends the rest again.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha1::{Digest, Sha1};

use super::media::{delete_logged, to_the_end, BodyError, ChunkSource, StagedFile};
use super::{Caller, Media, Xf};
use crate::error::{Error, Result};
use crate::ids::{Id, UploadId};
use crate::media::inspect::extension_of;
use crate::media::{MediaKind, Upload, UploadPart};
use crate::store::Appended;

/// How long an unfinished or unused upload is kept.
pub const UPLOAD_LIFETIME_HOURS: i64 = 24;
/// The longest `Upload-Metadata` header accepted.
const MAX_METADATA_BYTES: usize = 4096;
/// Bytes read per request when a finished upload is assembled.
const ASSEMBLY_READ: usize = 4 << 20;

/// Blob keys checked against the store at once by the sweep.
const SWEEP_BATCH: usize = 500;

/// What [`Xf::sweep_blobs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Blobs old enough to be checked.
    pub checked: usize,
    /// Of those, the ones nothing named, deleted.
    pub orphans: usize,
    /// Partial files of dead writers removed.
    pub partial_files: usize,
}

/// `Upload-Metadata`: comma-separated `key base64value` pairs (the value may be left out).
fn parse_metadata(header: &str) -> Result<Vec<(String, String)>> {
    let invalid = |message: &str| Error::invalid("Upload-Metadata", message.to_owned());
    if header.len() > MAX_METADATA_BYTES {
        return Err(invalid("must be at most 4096 bytes"));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for pair in header.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once(' ').unwrap_or((pair, ""));
        let value = value.trim();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid("keys must be ASCII without spaces or commas"));
        }
        if STANDARD.decode(value).is_err() {
            return Err(invalid("values must be base64"));
        }
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(invalid("a key is given twice"));
        }
        pairs.push((key.to_owned(), value.to_owned()));
    }
    Ok(pairs)
}

/// `Upload-Checksum`: `sha1 <base64 digest>`, the one algorithm offered.
fn parse_checksum(header: &str) -> Result<[u8; 20]> {
    let (algorithm, digest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if algorithm != "sha1" {
        return Err(Error::invalid(
            "Upload-Checksum",
            "the algorithm must be sha1 (Tus-Checksum-Algorithm)",
        ));
    }
    STANDARD
        .decode(digest.trim())
        .ok()
        .and_then(|bytes| <[u8; 20]>::try_from(bytes).ok())
        .ok_or_else(|| {
            Error::invalid(
                "Upload-Checksum",
                "the digest must be the base64 of 20 bytes",
            )
        })
}

impl Xf {
    /// The largest upload accepted: the larger of the video and image limits.
    pub fn max_upload_bytes(&self) -> u64 {
        let limits = self.inner.media_limits;
        limits.max_video_bytes.max(limits.max_image_bytes)
    }

    async fn append_to(
        &self,
        upload: Upload,
        offset: u64,
        checksum: Option<&str>,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<Upload> {
        if offset != upload.offset {
            return Err(Error::UploadOffsetMismatch {
                offset: upload.offset,
            });
        }
        let expected = checksum.map(parse_checksum).transpose()?;
        let _slot = self.upload_slot(&upload.organization_id)?;
        let room = upload.length - upload.offset;
        let key = format!(
            "uploads/{}/{}/{}",
            upload.organization_id,
            upload.id,
            uuid::Uuid::now_v7().simple()
        );
        let mut hashed = Sha1Chunks {
            body,
            hasher: Sha1::new(),
        };
        let lost = "the chunk was dropped; ask for the offset (HEAD) and send it again";
        let Some((blob, received)) = self
            .write_blob(key, &mut hashed, room, ("body", lost))
            .await?
        else {
            return Ok(upload);
        };
        if expected.is_some_and(|digest| hashed.hasher.finalize().as_slice() != digest) {
            blob.discard().await;
            return Err(Error::ChecksumMismatch);
        }
        // Counted once kept: a chunk its checksum refuses is not stored.
        self.metrics().upload_bytes("resumable", received);
        let part = UploadPart {
            offset,
            length: received,
            key: blob.key().to_owned(),
        };
        // Recorded on a task of its own: a client that goes away now cannot leave the part
        // recorded without its blob, or the blob without its part.
        let xf = self.clone();
        to_the_end("recording an upload chunk", async move {
            let outcome = xf
                .store()
                .append_upload_part(&upload.id, &part, xf.now())
                .await;
            match outcome {
                Ok(Appended::Added(upload)) => {
                    blob.keep();
                    Ok(upload)
                }
                other => {
                    blob.discard().await;
                    match other? {
                        Appended::OffsetMoved(offset) => {
                            Err(Error::UploadOffsetMismatch { offset })
                        }
                        _ => Err(Error::NotFound("upload")),
                    }
                }
            }
        })
        .await
    }

    /// Deletes up to `limit` expired uploads and their bytes; how many.
    pub async fn purge_expired_uploads(&self, limit: usize) -> Result<usize> {
        let expired = self.store().take_expired_uploads(self.now(), limit).await?;
        for upload in &expired {
            self.delete_parts(upload).await;
        }
        Ok(expired.len())
    }

    /// Removes the partial files of blob writers that died; how many.
    pub async fn clean_partial_blobs(&self) -> Result<usize> {
        self.inner
            .blobs
            .clean_partials()
            .await
            .map_err(|e| Error::unavailable_while("cleaning partial blob files", e))
    }

    /// Reconciles the blob store with the items and uploads: deletes every blob under
    /// `media/` and `uploads/` older than `grace` that no media item's file and no upload's
    /// part names (what a process that died between writing a blob and recording it left),
    /// and the partial files of dead writers. What it deleted.
    ///
    /// The grace keeps blobs being recorded right now: a blob is finished moments before its
    /// record is written, and `modified` is when it was finished.
    pub async fn sweep_blobs(&self, grace: std::time::Duration) -> Result<SweepReport> {
        let blobs = &self.inner.blobs;
        let unavailable = |e: std::io::Error| Error::unavailable_while("listing the blob store", e);
        let mut report = SweepReport {
            partial_files: self.clean_partial_blobs().await?,
            ..SweepReport::default()
        };
        let cutoff = std::time::SystemTime::now()
            .checked_sub(grace)
            .unwrap_or(std::time::UNIX_EPOCH);
        // `media/{org}/{file}` and `uploads/{org}/{upload}/{chunk}`: walked folder by folder,
        // so no more than one folder's listing is held at once.
        let mut folders = vec!["media/".to_owned(), "uploads/".to_owned()];
        while let Some(folder) = folders.pop() {
            let listing = blobs.list(&folder).await.map_err(unavailable)?;
            folders.extend(listing.folders);
            let old: Vec<String> = listing
                .blobs
                .into_iter()
                .filter(|blob| blob.modified < cutoff)
                .map(|blob| blob.key)
                .collect();
            report.checked += old.len();
            for batch in old.chunks(SWEEP_BATCH) {
                let in_use = self.store().blob_keys_in_use(batch).await?;
                for key in batch.iter().filter(|key| !in_use.contains(*key)) {
                    match blobs.delete(key).await {
                        Ok(()) => report.orphans += 1,
                        Err(error) => {
                            tracing::warn!(%error, %key, "an orphan blob was not deleted")
                        }
                    }
                }
            }
        }
        Ok(report)
    }

    async fn delete_parts(&self, upload: &Upload) {
        for part in &upload.parts {
            self.delete_blob(&part.key).await;
        }
    }

    pub(super) async fn delete_blob(&self, key: &str) {
        delete_logged(&*self.inner.blobs, key).await;
    }

    /// The finished upload `file_id` of the caller, copied into one staged file for a form of
    /// `kind` (its `filename` metadata gives the name and extension). The upload itself stays
    /// until [`Xf::consume_upload`].
    pub(super) async fn assemble_upload(
        &self,
        caller: &Caller,
        kind: MediaKind,
        file_id: &str,
    ) -> Result<(StagedFile, Upload)> {
        let not_ours = || {
            Error::invalid(
                "fileId",
                format!(
                    "{file_id:?} names no resumable upload of this organization (or it expired)"
                ),
            )
        };
        let id = UploadId::parse_str(file_id).ok_or_else(not_ours)?;
        let upload = self
            .store()
            .get_upload(&id, self.now())
            .await?
            .filter(|u| u.organization_id == caller.organization.id)
            .ok_or_else(not_ours)?;
        if !upload.is_complete() {
            return Err(Error::invalid(
                "fileId",
                format!(
                    "the upload is not finished: {} of {} bytes arrived",
                    upload.offset, upload.length
                ),
            ));
        }
        let name = upload
            .metadata_value("filename")
            .or_else(|| upload.metadata_value("name"))
            .filter(|n| extension_of(n).is_some())
            .ok_or_else(|| {
                Error::invalid(
                    "fileId",
                    "the upload's Upload-Metadata has no filename with an extension",
                )
            })?;
        let mut parts = PartReader {
            xf: self,
            parts: upload.parts.clone().into_iter(),
            current: None,
        };
        let staged = self.stage_of_kind(caller, kind, &name, &mut parts).await?;
        Ok((staged, upload))
    }

    /// Removes an upload that became a media item, and its chunks.
    pub(super) async fn consume_upload(&self, upload: &Upload) {
        match self.store().delete_upload(&upload.id).await {
            Ok(_) => self.delete_parts(upload).await,
            Err(error) => {
                tracing::warn!(%error, upload = %upload.id, "a used upload was not removed")
            }
        }
    }
}

impl Media<'_> {
    /// `POST /media/uploads`: a new upload of `length` bytes, with the first chunk when the
    /// request carries one (creation-with-upload).
    pub async fn create_upload(
        &self,
        caller: &Caller,
        length: u64,
        metadata: Option<&str>,
        first: Option<(Option<&str>, &mut (dyn ChunkSource + '_))>,
    ) -> Result<Upload> {
        if length > self.xf.max_upload_bytes() {
            return Err(Error::PayloadTooLarge {
                limit_bytes: self.xf.max_upload_bytes(),
            });
        }
        let metadata = metadata
            .map(parse_metadata)
            .transpose()?
            .unwrap_or_default();
        let now = self.xf.now();
        let upload = Upload {
            id: UploadId::new(),
            organization_id: caller.organization.id.clone(),
            length,
            offset: 0,
            metadata,
            parts: Vec::new(),
            created_at: now,
            expires_at: now.plus(chrono::Duration::hours(UPLOAD_LIFETIME_HOURS)),
        };
        self.xf.store().insert_upload(&upload).await?;
        match first {
            Some((checksum, body)) => self.xf.append_to(upload, 0, checksum, body).await,
            None => Ok(upload),
        }
    }

    /// The caller's upload `id`, unless it expired; `NotFound` otherwise.
    pub async fn get_upload(&self, caller: &Caller, id: &UploadId) -> Result<Upload> {
        self.xf
            .store()
            .get_upload(id, self.xf.now())
            .await?
            .filter(|u| u.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("upload"))
    }

    /// `PATCH /media/uploads/{id}`: appends the body at `offset`, which must be the upload's.
    pub async fn append_upload(
        &self,
        caller: &Caller,
        id: &UploadId,
        offset: u64,
        checksum: Option<&str>,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<Upload> {
        let upload = self.get_upload(caller, id).await?;
        self.xf.append_to(upload, offset, checksum, body).await
    }

    /// `DELETE /media/uploads/{id}`: drops the upload and its bytes.
    pub async fn terminate_upload(&self, caller: &Caller, id: &UploadId) -> Result<()> {
        let upload = self.get_upload(caller, id).await?;
        if let Some(upload) = self.xf.store().delete_upload(&upload.id).await? {
            self.xf.delete_parts(&upload).await;
        }
        Ok(())
    }
}

/// A body's chunks, hashed with SHA-1 on the way (tus's checksum extension).
struct Sha1Chunks<'a, 'b> {
    body: &'a mut (dyn ChunkSource + 'b),
    hasher: Sha1,
}

#[async_trait::async_trait]
impl ChunkSource for Sha1Chunks<'_, '_> {
    async fn next_chunk(&mut self) -> Option<std::result::Result<bytes::Bytes, BodyError>> {
        let chunk = self.body.next_chunk().await;
        if let Some(Ok(bytes)) = &chunk {
            self.hasher.update(bytes);
        }
        chunk
    }
}

/// The chunks of an upload's parts, read back in order, a few MiB at a time.
struct PartReader<'a> {
    xf: &'a Xf,
    parts: std::vec::IntoIter<UploadPart>,
    current: Option<(Box<dyn crate::media::blob::RangeRead>, u64)>,
}

#[async_trait::async_trait]
impl ChunkSource for PartReader<'_> {
    async fn next_chunk(&mut self) -> Option<std::result::Result<bytes::Bytes, BodyError>> {
        let broken = |message: String| Some(Err(BodyError::Broken(message)));
        loop {
            if let Some((blob, position)) = &mut self.current {
                if *position < blob.len() {
                    return match blob.read_at(*position, ASSEMBLY_READ).await {
                        Ok(bytes) if !bytes.is_empty() => {
                            *position += bytes.len() as u64;
                            Some(Ok(bytes::Bytes::from(bytes)))
                        }
                        Ok(_) => broken("an upload chunk is shorter than recorded".to_owned()),
                        Err(error) => broken(format!("an upload chunk could not be read: {error}")),
                    };
                }
            }
            let part = self.parts.next()?;
            match self.xf.inner.blobs.open(&part.key).await {
                Ok(blob) => self.current = Some((blob, 0)),
                Err(error) => return broken(format!("an upload chunk is missing: {error}")),
            }
        }
    }
}
