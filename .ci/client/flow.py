"""The generated-client check of `.ci/contract`: drives xf-server through Python clients that
openapi-python-client generated from the served documents (`xf_client` from
/api/v1/openapi.json, `xf_admin_client` from /admin/openapi.json), typed end to end.

The script is checked with `mypy --strict` before it runs, so every call, argument and field
it uses must type-check against the generated code. At run time, every parsed response is
walked: a field the document does not name (it lands in a model's `additional_properties`)
or a JSON object or array left as a plain `dict` fails the check, so nothing arrives untyped.

Flows: the SEO API (a property, a scan of a slow local site, the job, its cancellation, the
property's scan history and a weekly scan schedule, webhooks with a test delivery to a local receiver, parsed with the `webhooks` section's
model), the admin API (a media organization and a channel), and the media API (an upload of
an ffmpeg-made video with a YouTube thumbnail, read back with its per-platform objects, the
list with integer paging, the channels, a change, a cancel, a refused post deletion and the
item's delete).

Usage: python flow.py BASE_URL ADMIN_TOKEN LIVE_KEY VIDEO_PATH
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import io
import json
import struct
import sys
import threading
import time
import zlib
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import attrs
import httpx

import xf_admin_client
import xf_client
from xf_admin_client.api.channels import connect_channel
from xf_admin_client.api.organizations import create_organization
from xf_admin_client.models import EnvelopeChannelData, EnvelopeCreatedOrganization
from xf_admin_client.models import NewChannel, NewOrganization, NewOrganizationPlan
from xf_admin_client.models import Platform as AdminPlatform
from xf_client.api.health import health
from xf_client.api.jobs import cancel_job, get_job
from xf_client.api.media import cancel_video, delete_video, get_video, list_channels, list_videos
from xf_client.api.media import delete_video_posts, update_video
from xf_client.api.media import get_image, upload_image, upload_video
from xf_client.api.properties import create_property, get_property
from xf_client.api.scans import (
    delete_schedule,
    get_schedule,
    list_scans,
    put_schedule,
    queue_scan,
)
from xf_client.api.webhooks import create_webhook, delete_webhook, list_deliveries
from xf_client.api.webhooks import test_webhook, update_webhook
from xf_client.models import (
    MediaEnvelopeMediaItemWithMessage,
    DeleteVideoPostsPlatform,
    MediaEnvelopeDeletedMedia,
    EnvelopeCancelledJob,
    EnvelopeDeletedSchedule,
    EnvelopeDeletedWebhook,
    EnvelopeHealth,
    EnvelopeJobDetail,
    EnvelopePropertyCreated,
    EnvelopePropertyView,
    EnvelopeScanQueued,
    EnvelopeScheduleData,
    EnvelopeTestDelivery,
    EnvelopeWebhookData,
    EnvelopeWebhookWithSecret,
    EventType,
    MediaEnvelopeMediaItem,
    JobCompletedEvent,
    JobStatus,
    MediaEnvelopeChannels,
    MediaEnvelopeVideoList,
    MediaStatus,
    NewProperty,
    NewWebhook,
    PageEnvelopeDeliveryList,
    PageEnvelopeScanHistory,
    PlatformStatus,
    ScanOptions,
    TestDeliveryRequest,
    UpdateVideoBody,
    UploadImageBody,
    MediaEnvelopeUploaded,
    UploadVideoBody,
    ImageFileView,
    VideoFileView,
    WebhookPatch,
    Weekday,
    WeeklySchedule,
    YoutubeSettings,
    YoutubeSettingsPrivacy,
)
from xf_client.types import UNSET, File, Unset

T = TypeVar("T")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"generated-client check failed: {what}")


def typed(value: Any, path: str = "") -> None:
    """Fails on anything the generated models did not type."""
    if attrs.has(type(value)):
        extra = getattr(value, "additional_properties", None)
        check(not extra, f"{path or type(value).__name__} has fields the document does not name: {extra}")
        for field in attrs.fields(type(value)):
            if field.name != "additional_properties":
                typed(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, dict):
        check(False, f"{path} arrived as a plain dict: {value}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            typed(item, f"{path}[{index}]")
    else:
        check(
            value is None
            or isinstance(value, (str, int, float, bool, Enum, Unset, datetime.date)),
            f"{path} arrived untyped: {value!r}",
        )


def parsed(response: Any, expected: type[T], status: int) -> T:
    """The parsed body of a response that must have `status` and parse as `expected`."""
    check(
        int(response.status_code) == status,
        f"status {int(response.status_code)}, not {status}: {response.content[:500]!r}",
    )
    body = response.parsed
    check(isinstance(body, expected), f"{type(body).__name__} is not {expected.__name__}")
    typed(body)
    assert isinstance(body, expected)
    return body


class Local(BaseHTTPRequestHandler):
    """A slow site (every page takes 20 s, so a scan is still running when it is cancelled)
    and a webhook receiver (POST /hook)."""

    deliveries: list[tuple[dict[str, str], bytes]] = []

    def do_GET(self) -> None:
        time.sleep(20)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><head><title>Slow</title></head><body>slow</body></html>")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Local.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def verify_signature(secret: str, headers: dict[str, str], body: bytes) -> None:
    """Standard Webhooks v1: base64 HMAC-SHA256 of `id.timestamp.body`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    given = [s.split(",", 1)[1] for s in headers["webhook-signature"].split(" ")]
    check(expected in given, "the delivery's signature verifies")


def seo_flow(client: xf_client.AuthenticatedClient, local: str) -> None:
    health_reply = parsed(health.sync_detailed(client=client), EnvelopeHealth, 200)
    check(health_reply.data.status == "ok", "health is ok")

    created = parsed(
        create_property.sync_detailed(
            client=client, body=NewProperty(url=f"{local}/", name="Generated client")
        ),
        EnvelopePropertyCreated,
        201,
    )
    property_id: str = created.data.property_.id
    shown = parsed(get_property.sync_detailed(property_id, client=client), EnvelopePropertyView, 200)
    check(shown.data.url == f"{local}/" and shown.data.id == property_id, "the property reads back")

    queued = parsed(
        queue_scan.sync_detailed(property_id, client=client, body=ScanOptions(max_pages=5, max_depth=1)),
        EnvelopeScanQueued,
        202,
    )
    job_id: str = queued.data.job.id
    job = parsed(get_job.sync_detailed(job_id, client=client), EnvelopeJobDetail, 200)
    check(job.data.job.status in (JobStatus.PENDING, JobStatus.PROCESSING), "the scan waits or runs")
    cancelled = parsed(cancel_job.sync_detailed(job_id, client=client), EnvelopeCancelledJob, 200)
    check(cancelled.data.job.status == JobStatus.CANCELLED, "the scan is cancelled")

    history = parsed(
        list_scans.sync_detailed(property_id, client=client, limit=10), PageEnvelopeScanHistory, 200
    )
    scans = history.data.scans
    check(
        [scan.job_id for scan in scans] == [job_id] and scans[0].status == JobStatus.CANCELLED,
        "the history lists the cancelled scan",
    )
    weekly = WeeklySchedule(
        frequency="weekly", time="06:30", timezone="Europe/Berlin", day_of_week=Weekday.MONDAY
    )
    schedule = parsed(
        put_schedule.sync_detailed(property_id, client=client, body=weekly), EnvelopeScheduleData, 200
    )
    check(
        schedule.data.schedule.day_of_week == Weekday.MONDAY and schedule.data.schedule.runs == [],
        "the schedule is set",
    )
    read = parsed(get_schedule.sync_detailed(property_id, client=client), EnvelopeScheduleData, 200)
    check(read.data.schedule.next_run_at == schedule.data.schedule.next_run_at, "it reads back")
    parsed(delete_schedule.sync_detailed(property_id, client=client), EnvelopeDeletedSchedule, 200)

    made = parsed(
        create_webhook.sync_detailed(client=client, body=NewWebhook(name="Generated", url=f"{local}/hook")),
        EnvelopeWebhookWithSecret,
        201,
    )
    webhook_id: str = made.data.webhook.id
    check(EventType.JOB_COMPLETED in made.data.webhook.events, "job events by default")
    renamed = parsed(
        update_webhook.sync_detailed(webhook_id, client=client, body=WebhookPatch(name="Renamed")),
        EnvelopeWebhookData,
        200,
    )
    check(renamed.data.webhook.name == "Renamed", "the webhook is renamed")
    tested = parsed(
        test_webhook.sync_detailed(
            webhook_id, client=client, body=TestDeliveryRequest(event=EventType.JOB_COMPLETED)
        ),
        EnvelopeTestDelivery,
        200,
    )
    check(tested.data.delivery.status_code == 204, "the receiver got the test delivery")
    headers, body = Local.deliveries[-1]
    verify_signature(made.data.secret, headers, body)
    event = JobCompletedEvent.from_dict(json.loads(body))
    typed(event)
    check(event.test is True and event.data.job.status == JobStatus.COMPLETED, "the delivery's body types")
    log = parsed(
        list_deliveries.sync_detailed(webhook_id, client=client, limit=10),
        PageEnvelopeDeliveryList,
        200,
    )
    check(len(log.data.deliveries) == 1, "the log has the test delivery")
    parsed(delete_webhook.sync_detailed(webhook_id, client=client), EnvelopeDeletedWebhook, 200)


def media_key(admin: xf_admin_client.AuthenticatedClient) -> str:
    """A `pro` organization with a YouTube channel: its live key."""
    created = parsed(
        create_organization.sync_detailed(client=admin, body=NewOrganization(name="Media", plan=NewOrganizationPlan.PRO)),
        EnvelopeCreatedOrganization,
        201,
    )
    channel = parsed(
        connect_channel.sync_detailed(
            created.data.organization.id,
            client=admin,
            body=NewChannel(
                platform=AdminPlatform.YOUTUBE,
                access_token="ya29.generated-client",
                channel_id="UCgeneratedclient",
                title="Generated channel",
            ),
        ),
        EnvelopeChannelData,
        201,
    )
    check(channel.data.channel.account_id == "UCgeneratedclient", "the channel is connected")
    key: str = created.data.live_key
    return key


def tiny_png(width: int, height: int) -> bytes:
    """A grey PNG image of this size, made here (the thumbnail the upload carries)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def media_flow(client: xf_client.AuthenticatedClient, video: str) -> None:
    cover = io.BytesIO(tiny_png(64, 36))
    with open(video, "rb") as payload:
        uploaded = parsed(
            upload_video.sync_detailed(
                client=client,
                body=UploadVideoBody(
                    platforms='["youtube"]',
                    file=File(payload=payload, file_name="clip.mp4", mime_type="video/mp4"),
                    title="Generated upload",
                    scheduled_at=datetime.datetime(2099, 1, 1, 9, tzinfo=datetime.timezone.utc),
                    youtube=json.dumps({"title": "Launch", "privacy": "unlisted"}),
                    thumbnail=File(payload=cover, file_name="cover.png", mime_type="image/png"),
                ),
            ),
            MediaEnvelopeUploaded,
            201,
        )
    media_id: str = uploaded.data[0].id
    item = parsed(get_video.sync_detailed(media_id, client=client), MediaEnvelopeMediaItem, 200).data
    check(item.status == MediaStatus.SCHEDULED, "the video waits for its time")
    check(isinstance(item.file, VideoFileView), "the file is a video's")
    assert isinstance(item.file, VideoFileView)
    check(item.file.duration_ms >= 1000 and item.file.width == 640, "the file facts type")
    check(item.file.video_codec == "avc1", "the codec types")
    thumbnail = item.thumbnail
    check(isinstance(thumbnail, ImageFileView), "the thumbnail is an image's view")
    assert isinstance(thumbnail, ImageFileView)
    check(thumbnail.name == "cover.png" and thumbnail.width == 64, "the thumbnail's facts type")
    youtube = item.youtube
    check(youtube.status == PlatformStatus.IDLE, "YouTube waits for the time (its post is idle)")
    check(isinstance(youtube.settings, YoutubeSettings), "YouTube's settings type")
    assert isinstance(youtube.settings, YoutubeSettings)
    check(youtube.settings.privacy == YoutubeSettingsPrivacy.UNLISTED, "the privacy reads back")
    posts = youtube.posts
    check(isinstance(posts, list) and len(posts) == 1, "one post")
    assert isinstance(posts, list)
    check(posts[0].account == "UCgeneratedclient" and posts[0].video_id is None, "the post types")
    check(item.instagram.status == PlatformStatus.IDLE, "Instagram is idle")

    page = parsed(list_videos.sync_detailed(client=client, page=1, limit=10), MediaEnvelopeVideoList, 200).data
    check(page.pagination.page == 1 and page.pagination.total == 1, "integer paging")
    check(page.videos[0].id == media_id, "the list has the upload")
    channels = parsed(list_channels.sync_detailed(client=client), MediaEnvelopeChannels, 200).data
    check(channels.youtube[0].channel_id == "UCgeneratedclient", "channels by platform")

    later = datetime.datetime(2099, 2, 1, 9, tzinfo=datetime.timezone.utc)
    changed = parsed(
        update_video.sync_detailed(
            media_id,
            client=client,
            body=UpdateVideoBody(
                scheduled_at=later,
                title="Changed upload",
                youtube=YoutubeSettings(privacy=YoutubeSettingsPrivacy.PRIVATE),
            ),
        ),
        MediaEnvelopeMediaItem,
        200,
    ).data
    check(changed.scheduled_at == later and changed.title == "Changed upload", "the change reads back")
    changed_settings = changed.youtube.settings
    check(isinstance(changed_settings, YoutubeSettings), "YouTube's settings type after the change")
    assert isinstance(changed_settings, YoutubeSettings)
    check(changed_settings.privacy == YoutubeSettingsPrivacy.PRIVATE, "the privacy changed")
    check(changed_settings.title == "Launch", "the other settings are kept")

    cancelled = parsed(cancel_video.sync_detailed(media_id, client=client), MediaEnvelopeMediaItemWithMessage, 200)
    check(cancelled.message == "video cancelled", "the cancel's message")
    check(cancelled.data.status == MediaStatus.CANCELLED, "the item is cancelled")
    check(cancelled.data.youtube.status == PlatformStatus.CANCELLED, "its post is cancelled")
    never = delete_video_posts.sync_detailed(media_id, DeleteVideoPostsPlatform.YOUTUBE, client=client)
    check(never.status_code == 409, "a post never published is not deleted from YouTube")

    deleted = parsed(delete_video.sync_detailed(media_id, client=client), MediaEnvelopeDeletedMedia, 200).data
    check(deleted.id == media_id and deleted.deleted and deleted.cancelled_posts == 0, "the delete types")
    gone = get_video.sync_detailed(media_id, client=client)
    check(gone.status_code == 404, "a deleted item is not found")

    # A carousel: two images as `file` parts make one item, its `carousel` both in order.
    looks = [
        File(payload=io.BytesIO(tiny_png(32 + n, 32)), file_name=f"look-{n}.png", mime_type="image/png")
        for n in range(2)
    ]
    stored = parsed(
        upload_image.sync_detailed(client=client, body=UploadImageBody(file=looks, title="Looks")),
        MediaEnvelopeUploaded,
        201,
    )
    check(len(stored.data) == 1, "a carousel is one item")
    image = parsed(get_image.sync_detailed(stored.data[0].id, client=client), MediaEnvelopeMediaItem, 200).data
    carousel = image.carousel
    check(isinstance(carousel, list), "the carousel is a list of image views")
    assert isinstance(carousel, list)
    check([view.name for view in carousel] == ["look-0.png", "look-1.png"], "the images, in order")
    check(carousel[1].width == 33 and image.file.name == "look-0.png", "each image's facts type")


def main() -> None:
    base, admin_token, live_key, video = sys.argv[1:5]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Local)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # A property's URL names a host, not an address.
    local = f"http://localhost:{server.server_address[1]}"
    seo = xf_client.AuthenticatedClient(base_url=f"{base}/api/v1", token=live_key, timeout=httpx.Timeout(30.0))
    seo_flow(seo, local)
    admin = xf_admin_client.AuthenticatedClient(base_url=f"{base}/admin", token=admin_token, timeout=httpx.Timeout(30.0))
    media = xf_client.AuthenticatedClient(base_url=f"{base}/api/v1", token=media_key(admin), timeout=httpx.Timeout(30.0))
    media_flow(media, video)
    print("generated-client check: the SEO, admin and media flows passed, every field typed")


if __name__ == "__main__":
    main()
