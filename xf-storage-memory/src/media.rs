//! Media items and connected channels.

use std::collections::HashSet;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use xf_core::ids::{ChannelId, MediaId, OrganizationId, UploadId};
use xf_core::media::events::{cancel_events, channel_disconnected, post_events};
use xf_core::media::{Channel, MediaEdit, MediaItem, Platform, Post, Upload, UploadPart};
use xf_core::model::JobRecord;
use xf_core::model::JobStatus;
use xf_core::store::{
    edit_refused_running, Appended, MediaCancel, MediaDelete, MediaEdited, MediaFilter, MediaStore,
    PostsDelete, QueueSignal, StoreResult,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::MemoryStore;

fn matches(item: &MediaItem, filter: &MediaFilter) -> bool {
    item.kind == filter.kind
        && filter.status.is_none_or(|s| item.status == s)
        && filter
            .platform
            .is_none_or(|p| item.targets.contains_key(&p))
}

#[async_trait]
impl MediaStore for MemoryStore {
    async fn insert_media(&self, item: &MediaItem, jobs: &[JobRecord]) -> StoreResult<()> {
        let (item, jobs) = (&*stored(item), &*stored_all(jobs));
        {
            let mut state = self.write();
            state.check_new_jobs(jobs)?;
            if state.media.contains(item.id.as_str()) {
                return Err(StoreError::Duplicate("media item id"));
            }
            state.media.insert(
                item.organization_id.as_str(),
                item.created_at,
                item.id.as_str(),
                item,
            );
            for job in jobs {
                state.insert_job(job)?;
            }
            let month = item.created_at.month_key();
            state.add_usage(&item.organization_id, &month, &item.upload_usage());
        }
        if !jobs.is_empty() {
            self.signal(QueueSignal::JobsReady);
        }
        Ok(())
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
        let mut state = self.write();
        let Some(item) = state.media.get_mut(id.as_str()) else {
            return Ok(None);
        };
        let before = item.clone();
        if !item.set_post(platform, account, post.clone(), now) {
            return Ok(None);
        }
        let after = item.clone();
        for event in post_events(&before, &after, platform, account) {
            state.record_snapshot_event(event, now);
        }
        let usage = MediaItem::post_usage(&before, &after, platform, account);
        if !usage.is_zero() {
            state.add_usage(&after.organization_id, &now.month_key(), &usage);
        }
        Ok(Some(after))
    }

    async fn edit_media(
        &self,
        id: &MediaId,
        edit: &MediaEdit,
        now: Timestamp,
    ) -> StoreResult<MediaEdited> {
        let edit = &*stored(edit);
        let run_now = {
            let mut state = self.write();
            let Some(mut edited) = state.media.get(id.as_str()) else {
                return Ok(MediaEdited::Missing);
            };
            let moved = match edited.edit(edit, now) {
                Ok(moved) => moved,
                Err(reason) => return Ok(MediaEdited::Refused(reason)),
            };
            for (platform, job) in &moved.jobs {
                let pending = state
                    .jobs
                    .get(job.as_str())
                    .is_some_and(|j| j.record.status == JobStatus::Pending);
                if !pending {
                    return Ok(MediaEdited::Refused(edit_refused_running(*platform)));
                }
            }
            for (_, job) in &moved.jobs {
                state.reschedule_pending(job, moved.run_at);
            }
            if let Some(item) = state.media.get_mut(id.as_str()) {
                *item = edited.clone();
            }
            let run_now = !moved.jobs.is_empty() && moved.run_at <= now;
            (edited, run_now)
        };
        let (edited, run_now) = run_now;
        if run_now {
            self.signal(QueueSignal::JobsReady);
        }
        Ok(MediaEdited::Edited(Box::new(edited)))
    }

    async fn delete_media(&self, id: &MediaId) -> StoreResult<MediaDelete> {
        let mut state = self.write();
        let Some(item) = state.media.get(id.as_str()) else {
            return Ok(MediaDelete::Missing);
        };
        let jobs = match item.deletable() {
            Ok(jobs) => jobs,
            Err(reason) => return Ok(MediaDelete::Refused(reason)),
        };
        state.media.remove(
            item.organization_id.as_str(),
            item.created_at,
            item.id.as_str(),
        );
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
        let (item, started) = {
            let mut state = self.write();
            let Some(mut item) = state.media.get(id.as_str()) else {
                return Ok(PostsDelete::Missing);
            };
            let jobs = match item.delete_posts(platform, account, now) {
                Ok(jobs) => jobs,
                Err(reason) => return Ok(PostsDelete::Refused(reason)),
            };
            state.check_new_jobs(&jobs)?;
            for job in &jobs {
                state.insert_job(job)?;
            }
            if let Some(stored) = state.media.get_mut(id.as_str()) {
                *stored = item.clone();
            }
            (item, !jobs.is_empty())
        };
        if started {
            self.signal(QueueSignal::JobsReady);
        }
        Ok(PostsDelete::Started(Box::new(item)))
    }

    async fn cancel_media(&self, id: &MediaId, now: Timestamp) -> StoreResult<MediaCancel> {
        let mut state = self.write();
        let Some(item) = state.media.get_mut(id.as_str()) else {
            return Ok(MediaCancel::Missing);
        };
        let before = item.clone();
        let jobs = match item.cancel(now) {
            Ok(jobs) => jobs,
            Err(reason) => return Ok(MediaCancel::Refused(reason)),
        };
        let after = item.clone();
        for event in cancel_events(&before, &after) {
            state.record_snapshot_event(event, now);
        }
        Ok(MediaCancel::Cancelled(Box::new(after), jobs))
    }

    async fn find_channel(
        &self,
        organization_id: &OrganizationId,
        platform: Platform,
        account: &str,
    ) -> StoreResult<Option<Channel>> {
        let account = &*stored_str(account);
        Ok(self
            .read()
            .channels
            .iter()
            .find(|c| {
                &c.organization_id == organization_id
                    && c.platform == platform
                    && c.account_id == account
            })
            .cloned())
    }

    async fn update_channel_tokens(
        &self,
        id: &ChannelId,
        sealed_access_token: &str,
        sealed_refresh_token: Option<&str>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> StoreResult<()> {
        let mut state = self.write();
        if let Some(channel) = state.channels.iter_mut().find(|c| &c.id == id) {
            channel.sealed_access_token = sealed_access_token.to_owned();
            if let Some(refresh) = sealed_refresh_token {
                channel.sealed_refresh_token = Some(refresh.to_owned());
            }
            channel.expires_at = expires_at;
            channel.updated_at = now;
        }
        Ok(())
    }

    async fn disconnect_channel(
        &self,
        id: &ChannelId,
        reason: &str,
        now: Timestamp,
    ) -> StoreResult<()> {
        let reason = &*stored_str(reason);
        let mut state = self.write();
        let Some(channel) = state
            .channels
            .iter_mut()
            .find(|c| &c.id == id && c.disconnected.is_none())
        else {
            return Ok(());
        };
        channel.disconnected = Some(reason.to_owned());
        channel.updated_at = now;
        let event = channel_disconnected(channel, reason);
        state.record_snapshot_event(event, now);
        Ok(())
    }

    async fn get_media(&self, id: &MediaId) -> StoreResult<Option<MediaItem>> {
        Ok(self.read().media.get(id.as_str()))
    }

    async fn list_media(
        &self,
        organization_id: &OrganizationId,
        filter: &MediaFilter,
        offset: u64,
        limit: usize,
    ) -> StoreResult<(Vec<MediaItem>, u64)> {
        let state = self.read();
        let mut total = 0u64;
        let mut page = Vec::new();
        for id in state.media.ids_of(organization_id.as_str()) {
            let Some(item) = state.media.rows.get(&id) else {
                continue;
            };
            if !matches(item, filter) {
                continue;
            }
            if total >= offset && page.len() < limit {
                page.push(MediaItem::clone(item));
            }
            total += 1;
        }
        Ok((page, total))
    }

    async fn put_channel(&self, channel: &Channel) -> StoreResult<Option<Channel>> {
        let channel = &*stored(channel);
        let mut state = self.write();
        if !state
            .organizations
            .contains_key(channel.organization_id.as_str())
        {
            return Ok(None);
        }
        let existing = state.channels.iter_mut().find(|c| {
            c.organization_id == channel.organization_id
                && c.platform == channel.platform
                && c.account_id == channel.account_id
        });
        let stored = match existing {
            Some(existing) => {
                *existing = Channel {
                    id: existing.id.clone(),
                    created_at: existing.created_at,
                    default_board: channel
                        .default_board
                        .clone()
                        .or_else(|| existing.default_board.clone()),
                    ..channel.clone()
                };
                existing.clone()
            }
            None => {
                state.channels.push(channel.clone());
                channel.clone()
            }
        };
        Ok(Some(stored))
    }

    async fn set_channel_default_board(
        &self,
        id: &ChannelId,
        board: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Option<Channel>> {
        let board = board.map(stored_str);
        let board = board.as_deref();
        let mut state = self.write();
        let Some(channel) = state
            .channels
            .iter_mut()
            .find(|c| &c.id == id && c.platform == Platform::Pinterest)
        else {
            return Ok(None);
        };
        channel.default_board = board.map(str::to_owned);
        channel.updated_at = now;
        Ok(Some(channel.clone()))
    }

    async fn insert_upload(&self, upload: &Upload) -> StoreResult<()> {
        let upload = &*stored(upload);
        let mut state = self.write();
        if state.uploads.contains_key(upload.id.as_str()) {
            return Err(StoreError::Duplicate("upload id"));
        }
        state.uploads.insert(upload.id.to_string(), upload.clone());
        Ok(())
    }

    async fn get_upload(&self, id: &UploadId, now: Timestamp) -> StoreResult<Option<Upload>> {
        Ok(self
            .read()
            .uploads
            .get(id.as_str())
            .filter(|u| u.expires_at > now)
            .cloned())
    }

    async fn append_upload_part(
        &self,
        id: &UploadId,
        part: &UploadPart,
        now: Timestamp,
    ) -> StoreResult<Appended> {
        let part = &*stored(part);
        let mut state = self.write();
        let Some(upload) = state
            .uploads
            .get_mut(id.as_str())
            .filter(|u| u.expires_at > now)
        else {
            return Ok(Appended::Missing);
        };
        if upload.offset != part.offset {
            return Ok(Appended::OffsetMoved(upload.offset));
        }
        upload.offset += part.length;
        upload.parts.push(part.clone());
        Ok(Appended::Added(upload.clone()))
    }

    async fn delete_upload(&self, id: &UploadId) -> StoreResult<Option<Upload>> {
        Ok(self.write().uploads.remove(id.as_str()))
    }

    async fn take_expired_uploads(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<Upload>> {
        let mut state = self.write();
        let expired: Vec<String> = state
            .uploads
            .values()
            .filter(|u| u.expires_at <= now)
            .take(limit)
            .map(|u| u.id.to_string())
            .collect();
        Ok(expired
            .iter()
            .filter_map(|id| state.uploads.remove(id))
            .collect())
    }

    async fn blob_keys_in_use(&self, keys: &[String]) -> StoreResult<HashSet<String>> {
        let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let state = self.read();
        let files = state.media.values().flat_map(|item| item.blob_keys());
        let parts = state
            .uploads
            .values()
            .flat_map(|upload| upload.parts.iter().map(|part| part.key.as_str()));
        Ok(files
            .chain(parts)
            .filter(|key| wanted.contains(key))
            .map(str::to_owned)
            .collect())
    }

    async fn list_channels(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Channel>> {
        let state = self.read();
        let mut channels: Vec<Channel> = state
            .channels
            .iter()
            .filter(|c| &c.organization_id == organization_id)
            .cloned()
            .collect();
        channels.sort_by(|a, b| {
            (a.platform, a.created_at, a.id.as_str()).cmp(&(
                b.platform,
                b.created_at,
                b.id.as_str(),
            ))
        });
        Ok(channels)
    }
}
