/**
 * The TypeScript generated-client check of `.ci/contract`: drives xf-server through clients
 * that openapi-typescript generated from the served documents (`api.ts` from
 * /api/v1/openapi.json, `admin.ts` from /admin/openapi.json) with openapi-fetch, typed end to
 * end and compiled with `tsc --strict`.
 *
 * What the compiler checks: every call, parameter and body against the documents, every field
 * read at the type the document gives it, and (in `LOOSE`) exactly which fields of each schema
 * may be missing: a field the server always sends that the document leaves optional
 * (`field?: T`) fails compilation, as does a field newly typed optional anywhere.
 *
 * Flows: the SEO API (a property of a slow local site, a scan, its job and cancellation, the
 * scan history and issues, a weekly schedule, a webhook with a signed test delivery parsed as
 * `WebhookEvent` and narrowed on its `type`), the admin API (the organizations, one read back,
 * its keys, a media organization and its channel, the channels) and the media API (an
 * ffmpeg-made video uploaded, read back with its per-platform objects, listed, changed,
 * cancelled and deleted).
 *
 * Usage: node flow.js BASE_URL ADMIN_TOKEN LIVE_KEY VIDEO_PATH
 */

import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import createClient from "openapi-fetch";

import type { components as AdminComponents, paths as AdminPaths } from "./admin.js";
import type { components, paths } from "./api.js";

type Schemas = components["schemas"];
type AdminSchemas = AdminComponents["schemas"];

// --- What may be missing, checked by the compiler ----------------------------------------

/** The keys of `T` a value may leave out (of any branch, when `T` is a union). */
type OptionalKeys<T> = T extends unknown
    ? { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T]
    : never;

/** Whether `A` and `B` are the same type. */
type Equals<A, B> =
    (<G>() => G extends A ? 1 : 2) extends (<G>() => G extends B ? 1 : 2) ? true : false;

/** Each object schema of `S` with a field that may be missing, and those fields. */
type Loose<S> = {
    [N in keyof S as S[N] extends unknown[] ? never
        : S[N] extends object ? ([OptionalKeys<S[N]>] extends [never] ? never : N)
        : never]: OptionalKeys<S[N]>;
};

/**
 * Every schema of the API's document with fields that may be missing. Answers leave out only
 * what is absent by design (a job's `result` before it completes, a platform's state when it
 * is not selected, a post's first comment before it is sent, `test` of real deliveries,
 * `details` of errors other than validation's); the rest are request bodies, whose optional
 * fields are the client's to send.
 */
type ApiLoose = {
    BatchScanItem: "maxDepth" | "maxPages" | "render";
    ChannelDisconnectedEvent: "test";
    ErrorBody: "details";
    InstagramPost: "firstComment" | "thumbnail";
    InstagramSettings: "autoPublish" | "caption" | "coverTimestampMs" | "firstComment";
    InstagramState: "accounts" | "error" | "posts" | "settings";
    Job: "result";
    JobCancelledEvent: "test";
    JobCompletedEvent: "test";
    JobFailedEvent: "test";
    LinkedinPost: "firstComment" | "thumbnail";
    LinkedinSettings: "autoPublish" | "comment" | "firstComment";
    LinkedinState: "accounts" | "error" | "posts" | "settings";
    MediaCompletedEvent: "test";
    MediaFailedEvent: "test";
    MediaItemView: "carousel" | "thumbnail";
    MediaPostDeletedEvent: "test";
    MediaPostFailedEvent: "test";
    MediaPostPublishedEvent: "test";
    NewProperty: "name";
    NewWebhook: "enabled" | "events";
    PinterestPost: "firstComment" | "thumbnail";
    PinterestSettings: "autoPublish" | "boardId" | "coverTimestampMs" | "description" | "title";
    PinterestState: "accounts" | "error" | "posts" | "settings";
    PropertyView: "gsc" | "lastScan";
    QueuedJob: "progress";
    ScanOptions: "maxDepth" | "maxPages" | "render";
    ScanScheduleFailedEvent: "test";
    ScheduleRequest: "dayOfMonth" | "dayOfWeek" | "maxDepth" | "maxPages";
    TestDeliveryRequest: "event";
    TiktokPost: "firstComment" | "thumbnail";
    TiktokSettings:
        | "autoPublish" | "caption" | "coverTimestampMs" | "disableComment" | "disableDuet"
        | "disableStitch" | "privacy";
    TiktokState: "accounts" | "error" | "posts" | "settings";
    WebhookEvent: "test";
    WebhookPatch: "enabled" | "events" | "name" | "url";
    YoutubePost: "firstComment" | "thumbnail";
    YoutubeSettings: "autoPublish" | "description" | "firstComment" | "privacy" | "title";
    YoutubeState: "accounts" | "error" | "posts" | "settings";
};

/** The same for the admin API's document: request bodies, errors' `details`, and a
 * property's enrichments, which its answers leave out. */
type AdminLoose = {
    ChannelChanges: "defaultBoard";
    ErrorBody: "details";
    GscAccountLink: "accountEmail";
    LimitsPatch:
        | "maxActiveKeys" | "maxDepth" | "maxPages" | "orgWriteDaily" | "readPerHour"
        | "scansPerMonth" | "writePerHour";
    NewChannel:
        | "accountId" | "channelId" | "displayName" | "expiresAt" | "name" | "refreshToken"
        | "thumbnail" | "title" | "username";
    NewConnectLink: "channelId";
    NewOrganization: "shopDomain";
    OrganizationPatch: "limits" | "plan";
    PropertyView: "gsc" | "lastScan";
    UsageDelta: "aiInputTokens" | "aiOutputTokens" | "imagesOptimized" | "redirectsCreated";
};

const LOOSE: [Equals<Loose<Schemas>, ApiLoose>, Equals<Loose<AdminSchemas>, AdminLoose>] = [
    true,
    true,
];

// --- Helpers ----------------------------------------------------------------------------

function check(condition: boolean, what: string): asserts condition {
    if (!condition) {
        throw new Error(`generated-client check failed: ${what}`);
    }
}

/** The body of a typed answer that must have `status`. */
function answered<T>(
    reply: { data?: T; error?: unknown; response: Response },
    status: number,
    what: string,
): T {
    check(
        reply.response.status === status && reply.data !== undefined,
        `${what}: status ${reply.response.status}, not ${status}: ${JSON.stringify(reply.error)}`,
    );
    return reply.data;
}

/** A slow site (every page takes 20 s, so a scan still runs when it is cancelled) and a
 * webhook receiver (`POST /hook`). */
const deliveries: { headers: IncomingMessage["headers"]; body: string }[] = [];

function local(request: IncomingMessage, response: ServerResponse): void {
    if (request.method === "POST") {
        let body = "";
        request.setEncoding("utf8");
        request.on("data", (chunk: string) => {
            body += chunk;
        });
        request.on("end", () => {
            deliveries.push({ headers: request.headers, body });
            response.writeHead(204).end();
        });
        return;
    }
    setTimeout(() => {
        response
            .writeHead(200, { "Content-Type": "text/html" })
            .end("<html><head><title>Slow</title></head><body>slow</body></html>");
    }, 20_000);
}

/** Standard Webhooks v1: base64 HMAC-SHA256 of `id.timestamp.body`. */
function verifySignature(secret: string, delivery: (typeof deliveries)[number]): void {
    const header = (name: string): string => {
        const value = delivery.headers[name];
        check(typeof value === "string", `the delivery has ${name}`);
        return value;
    };
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    const signed = `${header("webhook-id")}.${header("webhook-timestamp")}.${delivery.body}`;
    const expected = createHmac("sha256", key).update(signed).digest("base64");
    const given = header("webhook-signature").split(" ").map((s) => s.split(",", 2)[1]);
    check(given.includes(expected), "the delivery's signature verifies");
}

// --- Flows ------------------------------------------------------------------------------

type Api = ReturnType<typeof createClient<paths>>;
type Admin = ReturnType<typeof createClient<AdminPaths>>;

async function seoFlow(api: Api, site: string): Promise<void> {
    const health = answered(await api.GET("/health"), 200, "health");
    check(health.data.status === "ok", "health is ok");

    const created = answered(
        await api.POST("/properties", { body: { url: `${site}/`, name: "Generated client" } }),
        201,
        "a property",
    );
    const propertyId: string = created.data.property.id;
    const shown = answered(
        await api.GET("/properties/{propertyId}", {
            params: { path: { propertyId }, query: { include: "lastScan" } },
        }),
        200,
        "the property",
    );
    check(shown.data.url === `${site}/` && shown.data.lastScan === null, "no scan yet");

    const queued = answered(
        await api.POST("/properties/{propertyId}/scans", {
            params: { path: { propertyId } },
            body: { maxPages: 5, maxDepth: 1 },
        }),
        202,
        "a scan",
    );
    const jobId: string = queued.data.job.id;
    const job = answered(await api.GET("/jobs/{jobId}", { params: { path: { jobId } } }), 200, "the job");
    // Always there, null until the job ends: typed `string | null`, never `undefined`.
    const completedAt: string | null = job.data.job.completedAt;
    check(completedAt === null, "the scan has not ended");
    check(["pending", "processing"].includes(job.data.job.status), "the scan waits or runs");
    const cancelled = answered(
        await api.POST("/jobs/{jobId}/cancel", { params: { path: { jobId } } }),
        200,
        "the cancel",
    );
    check(cancelled.data.job.status === "cancelled", "the scan is cancelled");
    const history = answered(
        await api.GET("/properties/{propertyId}/scans", {
            params: { path: { propertyId }, query: { limit: 10 } },
        }),
        200,
        "the history",
    );
    check(history.data.scans[0].jobId === jobId && history.meta.nextCursor === null, "one scan, one page");
    const issues = answered(
        await api.GET("/properties/{propertyId}/issues", { params: { path: { propertyId } } }),
        200,
        "the issues",
    );
    // The JSON list is JSON only: its type has no `string` branch to narrow away.
    check(issues.data.issues.length === 0 && issues.data.summary.open === 0, "no issues yet");

    const schedule = answered(
        await api.PUT("/properties/{propertyId}/schedule", {
            params: { path: { propertyId } },
            body: { frequency: "weekly", time: "06:30", timezone: "Europe/Berlin", dayOfWeek: "monday" },
        }),
        200,
        "a schedule",
    );
    check(schedule.data.schedule.dayOfWeek === "monday" && schedule.data.schedule.runs.length === 0, "set");
    answered(
        await api.DELETE("/properties/{propertyId}/schedule", { params: { path: { propertyId } } }),
        200,
        "the schedule's deletion",
    );

    const made = answered(
        await api.POST("/webhooks", { body: { name: "Generated", url: `${site}/hook` } }),
        201,
        "a webhook",
    );
    const webhookId = made.data.webhook.id;
    const never: string | null = made.data.webhook.lastDeliveryAt;
    check(never === null, "no delivery yet");
    const tested = answered(
        await api.POST("/webhooks/{webhookId}/test", {
            params: { path: { webhookId } },
            body: { event: "job.completed" },
        }),
        200,
        "a test delivery",
    );
    check(tested.data.delivery.statusCode === 204, "the receiver got it");
    const delivery = deliveries[deliveries.length - 1];
    verifySignature(made.data.secret, delivery);
    const event = JSON.parse(delivery.body) as Schemas["WebhookEvent"];
    switch (event.type) {
        case "job.completed": {
            // A completed job always has its result.
            const score: number = event.data.job.result.score;
            check(event.test === true && score >= 0, "the delivery's body types");
            break;
        }
        default:
            check(false, `a job.completed delivery, not ${event.type}`);
    }
    const read = answered(
        await api.GET("/webhooks/{webhookId}", { params: { path: { webhookId } } }),
        200,
        "the webhook",
    );
    check(read.data.webhook.lastDeliveryStatus === 204, "the last delivery is shown");
    answered(await api.DELETE("/webhooks/{webhookId}", { params: { path: { webhookId } } }), 200, "its deletion");

    const missing = await api.GET("/jobs/{jobId}", {
        params: { path: { jobId: "job_00000000000000000000000000000000" } },
    });
    check(missing.response.status === 404 && missing.error !== undefined, "an unknown job is a 404");
    // Every code is in the enum: a client switches on it exhaustively.
    const code: Schemas["ErrorBody"]["code"] = missing.error.error.code;
    check(code === "not_found", "its code");
}

async function adminFlow(admin: Admin, liveKey: string): Promise<string> {
    const organizations = answered(
        await admin.GET("/organizations", { params: { query: { limit: 10 } } }),
        200,
        "the organizations",
    );
    // The organization of the SEO flow's key, told by the key's prefix.
    let used: AdminSchemas["ApiKey"] | undefined;
    for (const organization of organizations.data.organizations) {
        const one = answered(
            await admin.GET("/organizations/{orgId}", { params: { path: { orgId: organization.id } } }),
            200,
            "one organization",
        );
        const shopDomain: string | null = one.data.organization.shopDomain;
        check(one.data.organization.name === organization.name && shopDomain === null, "it reads back");
        const keys = answered(
            await admin.GET("/organizations/{orgId}/api-keys", { params: { path: { orgId: organization.id } } }),
            200,
            "its keys",
        );
        used ??= keys.data.apiKeys.find((key) => liveKey.startsWith(key.prefix) && key.prefix.length === 12);
    }
    check(used !== undefined && used.mode === "live", "the SEO flow's key, by its prefix");
    const lastUsedAt: string | null = used.lastUsedAt;
    check(lastUsedAt !== null, "the SEO flow used it");

    const media = answered(
        await admin.POST("/organizations", { body: { name: "Media", plan: "pro" } }),
        201,
        "a media organization",
    );
    const orgId = media.data.organization.id;
    answered(
        await admin.POST("/organizations/{orgId}/channels", {
            params: { path: { orgId } },
            body: {
                platform: "youtube",
                accessToken: "ya29.generated-client",
                channelId: "UCgeneratedclient",
                title: "Generated channel",
            },
        }),
        201,
        "a channel",
    );
    const channels = answered(
        await admin.GET("/organizations/{orgId}/channels", { params: { path: { orgId } } }),
        200,
        "its channels",
    );
    const disconnected: string | null = channels.data.channels[0].disconnected;
    check(channels.data.channels[0].accountId === "UCgeneratedclient" && disconnected === null, "connected");
    return media.data.liveKey;
}

async function mediaFlow(api: Api, video: string): Promise<void> {
    const fields = {
        platforms: '["youtube"]',
        title: "Generated upload",
        scheduledAt: "2099-01-01T09:00:00Z",
        youtube: JSON.stringify({ title: "Launch", privacy: "unlisted" }),
    };
    const uploaded = answered(
        await api.POST("/media/videos", {
            body: { ...fields, file: "clip.mp4" },
            bodySerializer: (body) => {
                const form = new FormData();
                for (const [name, value] of Object.entries(body)) {
                    if (name !== "file" && typeof value === "string") {
                        form.append(name, value);
                    }
                }
                form.append("file", new Blob([readFileSync(video)], { type: "video/mp4" }), "clip.mp4");
                return form;
            },
        }),
        201,
        "an upload",
    );
    const mediaId = uploaded.data[0].id;
    const title: string | null = uploaded.data[0].title;
    check(title === "Generated upload", "the upload's title");
    const item = answered(
        await api.GET("/media/videos/{id}", { params: { path: { id: mediaId } } }),
        200,
        "the item",
    ).data;
    check(item.status === "scheduled" && item.scheduledAt !== null, "the video waits for its time");
    const description: string | null = item.description;
    check(description === null, "no description");
    check("durationMs" in item.file && item.file.width === 640, "the file facts type");
    const posts = item.youtube.posts;
    check(posts !== undefined && posts.length === 1 && posts[0].videoId === null, "one post, not yet sent");
    check(item.instagram.status === "idle" && item.instagram.posts === undefined, "Instagram not selected");

    const page = answered(
        await api.GET("/media/videos", { params: { query: { page: 1, limit: 10 } } }),
        200,
        "the list",
    );
    check(page.data.pagination.total === 1 && page.data.videos[0].id === mediaId, "the list has it");
    const channels = answered(await api.GET("/channels"), 200, "the channels");
    check(channels.data.youtube[0].channelId === "UCgeneratedclient", "channels by platform");

    const changed = answered(
        await api.PATCH("/media/videos/{id}", {
            params: { path: { id: mediaId } },
            body: { title: "Changed upload", youtube: { privacy: "private" } },
        }),
        200,
        "a change",
    );
    check(changed.data.title === "Changed upload", "the change reads back");
    const cancelled = answered(
        await api.POST("/media/videos/{id}/cancel", { params: { path: { id: mediaId } } }),
        200,
        "the cancel",
    );
    check(cancelled.message === "video cancelled" && cancelled.data.status === "cancelled", "cancelled");
    const deleted = answered(
        await api.DELETE("/media/videos/{id}", { params: { path: { id: mediaId } } }),
        200,
        "the deletion",
    );
    check(deleted.data.deleted && deleted.data.cancelledPosts === 0, "the delete types");
}

async function main(): Promise<void> {
    check(LOOSE.every(Boolean), "the optional fields are as pinned");
    const [base, adminToken, liveKey, video] = process.argv.slice(2);
    check(video !== undefined, "usage: node flow.js BASE_URL ADMIN_TOKEN LIVE_KEY VIDEO_PATH");
    const server = createServer(local);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    // A property's URL names a host, not an address.
    const site = `http://localhost:${(server.address() as AddressInfo).port}`;
    const api = createClient<paths>({ baseUrl: `${base}/api/v1`, headers: { Authorization: `Bearer ${liveKey}` } });
    await seoFlow(api, site);
    const admin = createClient<AdminPaths>({
        baseUrl: `${base}/admin`,
        headers: { Authorization: `Bearer ${adminToken}` },
    });
    const mediaKey = await adminFlow(admin, liveKey);
    const media = createClient<paths>({ baseUrl: `${base}/api/v1`, headers: { "X-API-Key": mediaKey } });
    await mediaFlow(media, video);
    server.closeAllConnections();
    server.close();
    console.log("TypeScript generated-client check: the SEO, admin and media flows passed");
}

await main();
