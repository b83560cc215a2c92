//! Media items and connected channels.
//!
//! See migrations 0008 and 0023 for the tables. A media item's files and per-platform plan are JSONB
//! (`StoredFile` and a map of `PlatformTarget`s, as their serde forms); its selected platforms
//! are also kept as a text array, which the list's `platform` filter reads.

use std::collections::{BTreeMap, HashSet};
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{Postgres, QueryBuilder, Row};
use xf_core::ids::{ChannelId, EventId, MediaId, OrganizationId, UploadId};
use xf_core::media::events::{cancel_events, channel_disconnected, post_events, NewEvent};
use xf_core::media::{
    Channel, MediaEdit, MediaItem, MediaKind, MediaStatus, Platform, PlatformTarget, Post,
    StoredFile, Upload, UploadPart,
};
use xf_core::model::{JobRecord, UsageCounters};
use xf_core::store::{
    check_new_job, edit_refused_running, Appended, MediaCancel, MediaDelete, MediaEdited,
    MediaFilter, MediaStore, PostsDelete, StoreResult,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::jobs::insert_jobs_query;
use crate::rows::{at, at_opt, big, unsigned, RowExt};
use crate::usage::add_usage_in;
use crate::{all, one, PgStore};

/// The columns [`media_item`] reads (`platforms` is not among them: it repeats the keys of
/// `targets`).
const MEDIA_COLUMNS: &str = "id, organization_id, kind, title, description, status, \
     scheduled_at, file, carousel, targets, created_at, updated_at";

/// What a change of [`PgStore::change_media`] decided.
enum Changed<T> {
    /// Write nothing; answer this.
    Keep(T),
    /// Write the item back with these events and this much usage; answer this.
    Write(T, Vec<NewEvent>, UsageCounters),
}

impl PgStore {
    /// Reads item `id` under its row lock, lets `change` change it, and writes it back with
    /// the events `change` names, in one transaction: two changes of one item at once (two
    /// posts' progress, a cancel and a worker) both land, each seeing the other. What
    /// `change` answered, or `None` when there is no such item.
    async fn change_media<T: Send>(
        &self,
        id: &MediaId,
        now: Timestamp,
        change: impl FnOnce(&mut MediaItem) -> Changed<T> + Send,
    ) -> StoreResult<Option<T>> {
        let mut tx = self.begin().await?;
        let Some(mut item) = locked_item(&mut tx, id).await? else {
            return Ok(None);
        };
        let (answer, events) = match change(&mut item) {
            Changed::Keep(answer) => return Ok(Some(answer)),
            Changed::Write(answer, events, usage) => {
                if !usage.is_zero() {
                    let (org, month) = (&item.organization_id, now.month_key());
                    add_usage_in(&mut *tx, org, &month, &usage).await?;
                }
                (answer, events)
            }
        };
        insert_events(&mut tx, &events, now).await?;
        write_item(&mut tx, &item).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(Some(answer))
    }
}

/// Item `id`, read under its row lock for the rest of the transaction.
async fn locked_item(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    id: &MediaId,
) -> StoreResult<Option<MediaItem>> {
    let row = sqlx::query(&format!(
        "SELECT {MEDIA_COLUMNS} FROM media_items WHERE id = $1 FOR UPDATE"
    ))
    .bind(id.as_str())
    .fetch_optional(&mut **tx)
    .await
    .map_err(store_error)?;
    one(row, media_item)
}

/// Writes back what an item's changes may change: its texts, schedule, status and targets.
async fn write_item(tx: &mut sqlx::Transaction<'_, Postgres>, item: &MediaItem) -> StoreResult<()> {
    sqlx::query(
        "UPDATE media_items SET title = $2, description = $3, scheduled_at = $4, status = $5, \
         targets = $6, updated_at = $7 WHERE id = $1",
    )
    .bind(item.id.as_str())
    .bind(item.title.as_deref())
    .bind(item.description.as_deref())
    .bind(at_opt(item.scheduled_at))
    .bind(item.status.as_str())
    .bind(Json(&item.targets))
    .bind(at(item.updated_at))
    .execute(&mut **tx)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// The columns [`channel_row`] reads.
const CHANNEL_COLUMNS: &str = "id, organization_id, platform, account_id, name, thumbnail, \
     sealed_access_token, sealed_refresh_token, expires_at, disconnected, default_board, \
     created_at, updated_at";

/// The columns [`upload_row`] reads.
const UPLOAD_COLUMNS: &str =
    "id, organization_id, length, \"offset\", metadata, parts, created_at, expires_at";

/// The names of [`Platform::ALL`], in its order: what `list_channels` sorts by.
fn platform_order() -> Vec<&'static str> {
    Platform::ALL.into_iter().map(Platform::as_str).collect()
}

/// Appends the conditions of an organization's items matching `filter` (after a `WHERE`).
/// Each filter adds a condition only when set, so every combination is its own prepared
/// statement.
fn push_matching(
    builder: &mut QueryBuilder<'_, Postgres>,
    organization_id: &OrganizationId,
    filter: &MediaFilter,
) {
    builder
        .push("organization_id = ")
        .push_bind(organization_id.as_str().to_owned())
        .push(" AND kind = ")
        .push_bind(filter.kind.as_str());
    if let Some(status) = filter.status {
        builder.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(platform) = filter.platform {
        builder
            .push(" AND ")
            .push_bind(platform.as_str())
            .push(" = ANY (platforms)");
    }
}

#[async_trait]
impl MediaStore for PgStore {
    async fn insert_media(&self, item: &MediaItem, jobs: &[JobRecord]) -> StoreResult<()> {
        let (item, jobs) = (&*stored(item), &*stored_all(jobs));
        jobs.iter().try_for_each(check_new_job)?;
        let platforms: Vec<&str> = item.targets.keys().map(|p| p.as_str()).collect();
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO media_items (id, organization_id, kind, title, description, status, \
                 scheduled_at, file, carousel, platforms, targets, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(item.id.as_str())
        .bind(item.organization_id.as_str())
        .bind(item.kind.as_str())
        .bind(&item.title)
        .bind(&item.description)
        .bind(item.status.as_str())
        .bind(at_opt(item.scheduled_at))
        .bind(Json(&item.file))
        .bind(Json(&item.carousel))
        .bind(&platforms)
        .bind(Json(&item.targets))
        .bind(at(item.created_at))
        .bind(at(item.updated_at))
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        let month = item.created_at.month_key();
        add_usage_in(
            &mut *tx,
            &item.organization_id,
            &month,
            &item.upload_usage(),
        )
        .await?;
        // Jobs wake idle workers through their insert trigger, at commit.
        for chunk in jobs.chunks(1_000) {
            insert_jobs_query(chunk)
                .build()
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)
    }

    async fn update_post(
        &self,
        id: &MediaId,
        platform: Platform,
        account: &str,
        post: &Post,
        now: Timestamp,
    ) -> StoreResult<Option<MediaItem>> {
        let (account, post) = (&*stored_str(account), &*stored(post));
        let changed = self
            .change_media(id, now, |item| {
                let before = item.clone();
                if !item.set_post(platform, account, post.clone(), now) {
                    return Changed::Keep(None);
                }
                let events = post_events(&before, item, platform, account);
                let usage = MediaItem::post_usage(&before, item, platform, account);
                Changed::Write(Some(item.clone()), events, usage)
            })
            .await?;
        Ok(changed.flatten())
    }

    async fn edit_media(
        &self,
        id: &MediaId,
        edit: &MediaEdit,
        now: Timestamp,
    ) -> StoreResult<MediaEdited> {
        let edit = &*stored(edit);
        let mut tx = self.begin().await?;
        let Some(mut item) = locked_item(&mut tx, id).await? else {
            return Ok(MediaEdited::Missing);
        };
        let moved = match item.edit(edit, now) {
            Ok(moved) => moved,
            Err(reason) => return Ok(MediaEdited::Refused(reason)),
        };
        if !moved.jobs.is_empty() {
            // Only pending jobs move; one a worker took up refuses the edit (the transaction
            // is dropped, so nothing changes).
            let ids: Vec<&str> = moved.jobs.iter().map(|(_, job)| job.as_str()).collect();
            let rows = sqlx::query(
                "UPDATE jobs SET run_at = $2 WHERE id = ANY($1) AND status = 'pending' \
                 RETURNING id",
            )
            .bind(&ids)
            .bind(at(moved.run_at))
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?;
            let updated: HashSet<String> = rows
                .iter()
                .map(|row| row.col::<String>("id"))
                .collect::<StoreResult<_>>()?;
            if let Some((platform, _)) = moved
                .jobs
                .iter()
                .find(|(_, job)| !updated.contains(job.as_str()))
            {
                return Ok(MediaEdited::Refused(edit_refused_running(*platform)));
            }
            if moved.run_at <= now {
                sqlx::query("SELECT pg_notify('xf_jobs_ready', '')")
                    .execute(&mut *tx)
                    .await
                    .map_err(store_error)?;
            }
        }
        write_item(&mut tx, &item).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(MediaEdited::Edited(Box::new(item)))
    }

    async fn delete_media(&self, id: &MediaId) -> StoreResult<MediaDelete> {
        let mut tx = self.begin().await?;
        let Some(item) = locked_item(&mut tx, id).await? else {
            return Ok(MediaDelete::Missing);
        };
        let jobs = match item.deletable() {
            Ok(jobs) => jobs,
            Err(reason) => return Ok(MediaDelete::Refused(reason)),
        };
        sqlx::query("DELETE FROM media_items WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(MediaDelete::Deleted(Box::new(item), jobs))
    }

    async fn delete_posts(
        &self,
        id: &MediaId,
        platform: Platform,
        account: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<PostsDelete> {
        let account = account.map(stored_str);
        let account = account.as_deref();
        let mut tx = self.begin().await?;
        let Some(mut item) = locked_item(&mut tx, id).await? else {
            return Ok(PostsDelete::Missing);
        };
        let jobs = match item.delete_posts(platform, account, now) {
            Ok(jobs) => jobs,
            Err(reason) => return Ok(PostsDelete::Refused(reason)),
        };
        if jobs.is_empty() {
            return Ok(PostsDelete::Started(Box::new(item)));
        }
        jobs.iter().try_for_each(check_new_job)?;
        write_item(&mut tx, &item).await?;
        // The jobs wake idle workers through their insert trigger, at commit.
        insert_jobs_query(&jobs)
            .build()
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(PostsDelete::Started(Box::new(item)))
    }

    async fn cancel_media(&self, id: &MediaId, now: Timestamp) -> StoreResult<MediaCancel> {
        let changed = self
            .change_media(id, now, |item| {
                let before = item.clone();
                match item.cancel(now) {
                    Ok(jobs) => {
                        let events = cancel_events(&before, item);
                        let cancelled = MediaCancel::Cancelled(Box::new(item.clone()), jobs);
                        Changed::Write(cancelled, events, UsageCounters::default())
                    }
                    Err(reason) => Changed::Keep(MediaCancel::Refused(reason)),
                }
            })
            .await?;
        Ok(changed.unwrap_or(MediaCancel::Missing))
    }

    async fn find_channel(
        &self,
        organization_id: &OrganizationId,
        platform: Platform,
        account: &str,
    ) -> StoreResult<Option<Channel>> {
        let account = &*stored_str(account);
        let row = sqlx::query(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM channels \
             WHERE organization_id = $1 AND platform = $2 AND account_id = $3"
        ))
        .bind(organization_id.as_str())
        .bind(platform.as_str())
        .bind(account)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, channel_row)
    }

    async fn update_channel_tokens(
        &self,
        id: &ChannelId,
        sealed_access_token: &str,
        sealed_refresh_token: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE channels SET sealed_access_token = $2, \
                 sealed_refresh_token = COALESCE($3, sealed_refresh_token), \
                 expires_at = $4, updated_at = $5 \
             WHERE id = $1",
        )
        .bind(id.as_str())
        .bind(sealed_access_token)
        .bind(sealed_refresh_token)
        .bind(at_opt(expires_at))
        .bind(at(now))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn disconnect_channel(
        &self,
        id: &ChannelId,
        reason: &str,
        now: Timestamp,
    ) -> StoreResult<()> {
        let reason = &*stored_str(reason);
        // Only a connected channel changes, and only then is the event written, with it.
        let mut tx = self.begin().await?;
        let row = sqlx::query(&format!(
            "UPDATE channels SET disconnected = $2, updated_at = $3 \
             WHERE id = $1 AND disconnected IS NULL RETURNING {CHANNEL_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(reason)
        .bind(at(now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        if let Some(channel) = one(row, channel_row)? {
            insert_events(&mut tx, &[channel_disconnected(&channel, reason)], now).await?;
        }
        tx.commit().await.map_err(store_error)?;
        Ok(())
    }

    async fn get_media(&self, id: &MediaId) -> StoreResult<Option<MediaItem>> {
        let row = sqlx::query(&format!(
            "SELECT {MEDIA_COLUMNS} FROM media_items WHERE id = $1"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, media_item)
    }

    async fn list_media(
        &self,
        organization_id: &OrganizationId,
        filter: &MediaFilter,
        offset: u64,
        limit: usize,
    ) -> StoreResult<(Vec<MediaItem>, u64)> {
        // One statement, so the page and the total come from one snapshot: the count is one
        // row, joined with the page's rows. An empty page (past the end, or a limit of 0)
        // still gives the count's row, with nulls for the item.
        let mut builder = QueryBuilder::new(format!(
            "WITH page AS (SELECT {MEDIA_COLUMNS} FROM media_items WHERE "
        ));
        push_matching(&mut builder, organization_id, filter);
        builder
            .push(" ORDER BY created_at DESC, id DESC OFFSET ")
            .push_bind(big(offset))
            .push(" LIMIT ")
            .push_bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .push(") SELECT t.total, p.* FROM (")
            .push("SELECT count(*) AS total FROM media_items WHERE ");
        push_matching(&mut builder, organization_id, filter);
        builder.push(") t LEFT JOIN page p ON true ORDER BY p.created_at DESC, p.id DESC");
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        let total = match rows.first() {
            Some(row) => row.count("total")?,
            None => return Err(StoreError::internal("media count missing")),
        };
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.col::<Option<String>>("id")?.is_some() {
                items.push(media_item(row)?);
            }
        }
        Ok((items, total))
    }

    async fn put_channel(&self, channel: &Channel) -> StoreResult<Option<Channel>> {
        let channel = &*stored(channel);
        // Nothing is inserted for an organization that does not exist (and the foreign key
        // would refuse it anyway). Connecting again updates the row in place: the unique
        // constraint decides, so concurrent connections of one account make one channel.
        let row = sqlx::query(&format!(
            "INSERT INTO channels (id, organization_id, platform, account_id, name, thumbnail, \
                 sealed_access_token, sealed_refresh_token, expires_at, created_at, updated_at, \
                 default_board) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 \
             WHERE EXISTS (SELECT 1 FROM organizations WHERE id = $2) \
             ON CONFLICT (organization_id, platform, account_id) DO UPDATE SET \
                 name = EXCLUDED.name, \
                 thumbnail = EXCLUDED.thumbnail, \
                 sealed_access_token = EXCLUDED.sealed_access_token, \
                 sealed_refresh_token = EXCLUDED.sealed_refresh_token, \
                 expires_at = EXCLUDED.expires_at, \
                 disconnected = NULL, \
                 default_board = COALESCE(EXCLUDED.default_board, channels.default_board), \
                 updated_at = EXCLUDED.updated_at \
             RETURNING {CHANNEL_COLUMNS}"
        ))
        .bind(channel.id.as_str())
        .bind(channel.organization_id.as_str())
        .bind(channel.platform.as_str())
        .bind(&channel.account_id)
        .bind(&channel.name)
        .bind(&channel.thumbnail)
        .bind(&channel.sealed_access_token)
        .bind(&channel.sealed_refresh_token)
        .bind(at_opt(channel.expires_at))
        .bind(at(channel.created_at))
        .bind(at(channel.updated_at))
        .bind(&channel.default_board)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, channel_row)
    }

    async fn set_channel_default_board(
        &self,
        id: &ChannelId,
        board: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Option<Channel>> {
        let board = board.map(stored_str);
        let board = board.as_deref();
        let row = sqlx::query(&format!(
            "UPDATE channels SET default_board = $2, updated_at = $3 \
             WHERE id = $1 AND platform = 'pinterest' RETURNING {CHANNEL_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(board)
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, channel_row)
    }

    async fn insert_upload(&self, upload: &Upload) -> StoreResult<()> {
        let upload = &*stored(upload);
        sqlx::query(
            "INSERT INTO media_uploads (id, organization_id, length, \"offset\", metadata, \
                 parts, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(upload.id.as_str())
        .bind(upload.organization_id.as_str())
        .bind(big(upload.length))
        .bind(big(upload.offset))
        .bind(Json(&upload.metadata))
        .bind(Json(&upload.parts))
        .bind(at(upload.created_at))
        .bind(at(upload.expires_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_upload(&self, id: &UploadId, now: Timestamp) -> StoreResult<Option<Upload>> {
        let row = sqlx::query(&format!(
            "SELECT {UPLOAD_COLUMNS} FROM media_uploads WHERE id = $1 AND expires_at > $2"
        ))
        .bind(id.as_str())
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, upload_row)
    }

    async fn append_upload_part(
        &self,
        id: &UploadId,
        part: &UploadPart,
        now: Timestamp,
    ) -> StoreResult<Appended> {
        let part = &*stored(part);
        // The offset moves only from the part's own offset. When it does not, the row is read
        // again in a statement of its own: within the update's statement a concurrent winner's
        // change is not visible yet, and the loser would report the old offset.
        let moved = sqlx::query(&format!(
            "UPDATE media_uploads SET \"offset\" = \"offset\" + $3, \
                 parts = parts || jsonb_build_array($4::jsonb) \
             WHERE id = $1 AND \"offset\" = $2 AND expires_at > $5 \
             RETURNING {UPLOAD_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(big(part.offset))
        .bind(big(part.length))
        .bind(Json(part))
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        if let Some(row) = moved {
            return Ok(Appended::Added(upload_row(&row)?));
        }
        Ok(match self.get_upload(id, now).await? {
            Some(upload) => Appended::OffsetMoved(upload.offset),
            None => Appended::Missing,
        })
    }

    async fn delete_upload(&self, id: &UploadId) -> StoreResult<Option<Upload>> {
        let row = sqlx::query(&format!(
            "DELETE FROM media_uploads WHERE id = $1 RETURNING {UPLOAD_COLUMNS}"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, upload_row)
    }

    async fn take_expired_uploads(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<Upload>> {
        // SKIP LOCKED: two instances purging at once take different uploads.
        let rows = sqlx::query(&format!(
            "DELETE FROM media_uploads WHERE id IN ( \
                 SELECT id FROM media_uploads WHERE expires_at <= $1 \
                 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
             RETURNING {UPLOAD_COLUMNS}"
        ))
        .bind(at(now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, upload_row)
    }

    async fn blob_keys_in_use(&self, keys: &[String]) -> StoreResult<HashSet<String>> {
        // Items by the indexes on their file's key, their carousel's images (one probe of the
        // GIN index per key asked) and their YouTube thumbnail's (only YouTube takes one);
        // uploads are few (they expire in a day), and their parts are read whole.
        let rows = sqlx::query(
            "SELECT file->>'key' AS key FROM media_items WHERE file->>'key' = ANY($1) \
             UNION \
             SELECT targets->'youtube'->'thumbnail'->>'key' FROM media_items \
             WHERE targets->'youtube'->'thumbnail'->>'key' = ANY($1) \
             UNION \
             SELECT asked FROM unnest($1::text[]) AS asked WHERE EXISTS (SELECT 1 FROM media_items \
                 WHERE carousel @> jsonb_build_array(jsonb_build_object('key', asked))) \
             UNION \
             SELECT part->>'key' FROM media_uploads, jsonb_array_elements(parts) AS part \
             WHERE part->>'key' = ANY($1)",
        )
        .bind(keys)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        rows.iter()
            .map(|row| row.try_get::<String, _>("key").map_err(store_error))
            .collect()
    }

    async fn list_channels(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Channel>> {
        let rows = sqlx::query(&format!(
            "SELECT {CHANNEL_COLUMNS} FROM channels WHERE organization_id = $1 \
             ORDER BY array_position($2::text[], platform), created_at, id"
        ))
        .bind(organization_id.as_str())
        .bind(platform_order())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, channel_row)
    }
}

/// A `media_items` row.
fn media_item(row: &PgRow) -> StoreResult<MediaItem> {
    let kind = match row.col::<String>("kind")?.as_str() {
        "video" => MediaKind::Video,
        "image" => MediaKind::Image,
        other => {
            return Err(StoreError::internal(format!(
                "unknown media kind {other:?}"
            )))
        }
    };
    let status: String = row.col("status")?;
    let status = MediaStatus::parse(&status)
        .ok_or_else(|| StoreError::internal(format!("unknown media status {status:?}")))?;
    Ok(MediaItem {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        kind,
        title: row.col("title")?,
        description: row.col("description")?,
        status,
        scheduled_at: row.timestamp_opt("scheduled_at")?,
        file: row.col::<Json<StoredFile>>("file")?.0,
        carousel: row.col::<Json<Vec<StoredFile>>>("carousel")?.0,
        targets: row
            .col::<Json<BTreeMap<Platform, PlatformTarget>>>("targets")?
            .0,
        created_at: row.timestamp("created_at")?,
        updated_at: row.timestamp("updated_at")?,
    })
}

/// A `channels` row.
fn channel_row(row: &PgRow) -> StoreResult<Channel> {
    let platform: String = row.col("platform")?;
    let platform = Platform::parse(&platform)
        .ok_or_else(|| StoreError::internal(format!("unknown platform {platform:?}")))?;
    Ok(Channel {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        platform,
        account_id: row.col("account_id")?,
        name: row.col("name")?,
        thumbnail: row.col("thumbnail")?,
        sealed_access_token: row.col("sealed_access_token")?,
        sealed_refresh_token: row.col("sealed_refresh_token")?,
        expires_at: row.timestamp_opt("expires_at")?,
        disconnected: row.col("disconnected")?,
        default_board: row.col("default_board")?,
        created_at: row.timestamp("created_at")?,
        updated_at: row.timestamp("updated_at")?,
    })
}

/// A `media_uploads` row.
fn upload_row(row: &PgRow) -> StoreResult<Upload> {
    Ok(Upload {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        length: unsigned(row.col("length")?, "upload length")?,
        offset: unsigned(row.col("offset")?, "upload offset")?,
        metadata: row.col::<Json<Vec<(String, String)>>>("metadata")?.0,
        parts: row.col::<Json<Vec<UploadPart>>>("parts")?.0,
        created_at: row.timestamp("created_at")?,
        expires_at: row.timestamp("expires_at")?,
    })
}

/// Writes events that carry their data to the outbox, in the caller's transaction (the insert
/// wakes the delivery engines when it commits).
pub(crate) async fn insert_events(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    events: &[NewEvent],
    now: Timestamp,
) -> StoreResult<()> {
    let events = &*stored_all(events);
    if events.is_empty() {
        return Ok(());
    }
    let mut builder = QueryBuilder::<Postgres>::new(
        "INSERT INTO events (id, organization_id, event_type, data, created_at) ",
    );
    builder.push_values(events, |mut row, event| {
        row.push_bind(EventId::new().as_str().to_owned())
            .push_bind(event.organization_id.as_str())
            .push_bind(event.event_type.as_str())
            .push_bind(Json(&event.data))
            .push_bind(at(now));
    });
    builder
        .build()
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    Ok(())
}
