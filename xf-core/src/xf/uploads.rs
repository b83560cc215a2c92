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

use super::media::{ChunkSource, StagedFile};
use super::{Caller, Xf};
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

    /// `POST /media/uploads`: a new upload of `length` bytes, with the first chunk when the
    /// request carries one (creation-with-upload).
    pub async fn create_upload(
        &self,
        caller: &Caller,
        length: u64,
        metadata: Option<&str>,
        first: Option<(Option<&str>, &mut (dyn ChunkSource + '_))>,
    ) -> Result<Upload> {
        if length > self.max_upload_bytes() {
            return Err(Error::PayloadTooLarge {
                limit_bytes: self.max_upload_bytes(),
            });
        }
        let metadata = metadata
            .map(parse_metadata)
            .transpose()?
            .unwrap_or_default();
        let now = self.now();
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
        self.store().insert_upload(&upload).await?;
        match first {
            Some((checksum, body)) => self.append_to(upload, 0, checksum, body).await,
            None => Ok(upload),
        }
    }

    /// The caller's upload `id`, unless it expired; `NotFound` otherwise.
    pub async fn get_upload(&self, caller: &Caller, id: &str) -> Result<Upload> {
        let id: UploadId = Self::path_id(id, "upload")?;
        self.store()
            .get_upload(&id, self.now())
            .await?
            .filter(|u| u.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("upload"))
    }

    /// `PATCH /media/uploads/{id}`: appends the body at `offset`, which must be the upload's.
    pub async fn append_upload(
        &self,
        caller: &Caller,
        id: &str,
        offset: u64,
        checksum: Option<&str>,
        body: &mut (dyn ChunkSource + '_),
    ) -> Result<Upload> {
        let upload = self.get_upload(caller, id).await?;
        self.append_to(upload, offset, checksum, body).await
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
        let room = upload.length - upload.offset;
        let key = format!(
            "uploads/{}/{}/{}",
            upload.organization_id,
            upload.id,
            uuid::Uuid::now_v7().simple()
        );
        let blobs = &self.inner.blobs;
        let mut writer = blobs.create(&key).await.map_err(|e| Error::Unavailable {
            cause: format!("the blob store refused an upload chunk: {e}"),
        })?;
        let mut hasher = Sha1::new();
        let mut received = 0u64;
        while let Some(chunk) = body.next_chunk().await {
            let failure = match chunk {
                Err(cause) => Some(Error::invalid(
                    "body",
                    format!("the chunk broke off before its end and was dropped: {cause}"),
                )),
                Ok(chunk) => {
                    received += chunk.len() as u64;
                    if received > room {
                        Some(Error::PayloadTooLarge { limit_bytes: room })
                    } else {
                        hasher.update(&chunk);
                        writer.write(chunk).await.err().map(|e| Error::Unavailable {
                            cause: format!("writing an upload chunk: {e}"),
                        })
                    }
                }
            };
            if let Some(error) = failure {
                writer.abort().await;
                return Err(error);
            }
        }
        if expected.is_some_and(|digest| hasher.finalize().as_slice() != digest) {
            writer.abort().await;
            return Err(Error::ChecksumMismatch);
        }
        if received == 0 {
            writer.abort().await;
            return Ok(upload);
        }
        writer.finish().await.map_err(|e| Error::Unavailable {
            cause: format!("finishing an upload chunk: {e}"),
        })?;
        let part = UploadPart {
            offset,
            length: received,
            key: key.clone(),
        };
        let outcome = self
            .store()
            .append_upload_part(&upload.id, &part, self.now())
            .await;
        match outcome {
            Ok(Appended::Added(upload)) => Ok(upload),
            other => {
                self.delete_blob(&key).await;
                match other? {
                    Appended::OffsetMoved(offset) => Err(Error::UploadOffsetMismatch { offset }),
                    _ => Err(Error::NotFound("upload")),
                }
            }
        }
    }

    /// `DELETE /media/uploads/{id}`: drops the upload and its bytes.
    pub async fn terminate_upload(&self, caller: &Caller, id: &str) -> Result<()> {
        let upload = self.get_upload(caller, id).await?;
        if let Some(upload) = self.store().delete_upload(&upload.id).await? {
            self.delete_parts(&upload).await;
        }
        Ok(())
    }

    /// Deletes up to `limit` expired uploads and their bytes; how many.
    pub async fn purge_expired_uploads(&self, limit: usize) -> Result<usize> {
        let expired = self.store().take_expired_uploads(self.now(), limit).await?;
        for upload in &expired {
            self.delete_parts(upload).await;
        }
        Ok(expired.len())
    }

    async fn delete_parts(&self, upload: &Upload) {
        for part in &upload.parts {
            self.delete_blob(&part.key).await;
        }
    }

    pub(super) async fn delete_blob(&self, key: &str) {
        if let Err(error) = self.inner.blobs.delete(key).await {
            tracing::warn!(%error, %key, "a blob was not deleted");
        }
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
        let staged = self
            .stage_media_file(caller, kind, &name, &mut parts)
            .await?;
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

/// The chunks of an upload's parts, read back in order, a few MiB at a time.
struct PartReader<'a> {
    xf: &'a Xf,
    parts: std::vec::IntoIter<UploadPart>,
    current: Option<(Box<dyn crate::media::blob::RangeRead>, u64)>,
}

#[async_trait::async_trait]
impl ChunkSource for PartReader<'_> {
    async fn next_chunk(&mut self) -> Option<std::result::Result<bytes::Bytes, String>> {
        loop {
            if let Some((blob, position)) = &mut self.current {
                if *position < blob.len() {
                    return Some(match blob.read_at(*position, ASSEMBLY_READ).await {
                        Ok(bytes) if !bytes.is_empty() => {
                            *position += bytes.len() as u64;
                            Ok(bytes::Bytes::from(bytes))
                        }
                        Ok(_) => Err("an upload chunk is shorter than recorded".to_owned()),
                        Err(error) => Err(format!("an upload chunk could not be read: {error}")),
                    });
                }
            }
            let part = self.parts.next()?;
            match self.xf.inner.blobs.open(&part.key).await {
                Ok(blob) => self.current = Some((blob, 0)),
                Err(error) => return Some(Err(format!("an upload chunk is missing: {error}"))),
            }
        }
    }
}
