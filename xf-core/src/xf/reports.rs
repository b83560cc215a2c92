//! Shared reports.

use std::collections::HashMap;

use super::{Caller, Xf};
use crate::api::{Page, PageParams, ReportDetail, ReportItem};
use crate::error::{Error, Result};
use crate::ids::PropertyId;
use crate::model::{Property, Report};
use crate::params::ReportToken;
use crate::store::After;

impl Xf {
    /// `GET /reports`: reports that have not expired, newest first.
    pub async fn list_reports(
        &self,
        caller: &Caller,
        params: &PageParams,
    ) -> Result<Page<ReportItem>> {
        let (request, limit) = self.page_request("reports", "", params)?;
        let reports = self
            .store()
            .list_live_reports(&caller.organization.id, self.now(), &request)
            .await?;
        let page = self.finish_page("reports", "", reports, limit, |r| After {
            created_at: r.created_at,
            id: r.token.clone(),
        });
        Ok(Page {
            items: self.report_items(page.items).await?,
            next_cursor: page.next_cursor,
        })
    }

    /// `GET /reports/{token}`: also an expired report, flagged `expired`.
    pub async fn get_report(&self, caller: &Caller, token: &str) -> Result<ReportDetail> {
        let report = self
            .report_by_token(token)
            .await?
            .filter(|r| r.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("report"))?;
        self.report_detail(report).await
    }

    /// The report with this token, if the token is well formed and names one (of any
    /// organization: the caller decides who may see it).
    pub(super) async fn report_by_token(&self, token: &str) -> Result<Option<Report>> {
        if ReportToken::parse(token).is_err() {
            return Ok(None);
        }
        Ok(self.store().get_report(token).await?)
    }

    pub(super) async fn report_item(&self, report: Report) -> Result<ReportItem> {
        let mut items = self.report_items(vec![report]).await?;
        items
            .pop()
            .ok_or_else(|| Error::internal("report item went missing"))
    }

    /// The items of a page of reports, with one store call for all their properties.
    async fn report_items(&self, reports: Vec<Report>) -> Result<Vec<ReportItem>> {
        if reports.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids: Vec<PropertyId> = reports.iter().map(|r| r.property_id.clone()).collect();
        ids.sort();
        ids.dedup();
        let properties: HashMap<PropertyId, Property> = self
            .store()
            .get_properties(&ids)
            .await?
            .into_iter()
            .map(|p| (p.id.clone(), p))
            .collect();
        reports
            .into_iter()
            .map(|report| {
                let property = properties.get(&report.property_id).ok_or_else(|| {
                    Error::internal(format!("report {} lost its property", report.token))
                })?;
                let public_url = format!("{}/r/{}", self.config().public_base_url, report.token);
                Ok(ReportItem {
                    token: report.token,
                    property_id: report.property_id,
                    property_name: property.name.clone(),
                    property_url: property.url.clone(),
                    scan_id: report.scan_id,
                    expires_at: report.expires_at,
                    view_count: report.view_count,
                    created_at: report.created_at,
                    public_url,
                })
            })
            .collect()
    }

    pub(super) async fn report_detail(&self, report: Report) -> Result<ReportDetail> {
        let job = self
            .store()
            .get_job(&report.scan_id)
            .await?
            .ok_or_else(|| Error::internal(format!("report {} lost its scan", report.token)))?;
        // Reports are only made of completed scans, which always have both.
        let (Some(result), Some(scanned_at)) = (job.scan_result(), job.completed_at) else {
            return Err(Error::internal(format!(
                "report {} shows scan {}, which has no result or completion time",
                report.token, job.id
            )));
        };
        let expired = report.expires_at <= self.now();
        Ok(ReportDetail {
            score: result.score,
            pages_scanned: result.pages_scanned,
            scanned_at,
            expired,
            item: self.report_item(report).await?,
        })
    }
}
