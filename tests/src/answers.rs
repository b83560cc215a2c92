//! Holds recorded answers ([`crate::Answer`]) to the served OpenAPI documents: which operations
//! were answered, whether each answer is valid against its success schema, and which fields
//! were present in every answer of their schema without the schema requiring them (a client
//! generated from the document would type them `field?: T | null` though they are always
//! there).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use http::Method;
use serde_json::Value;

use crate::{Answer, Service};

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Findings {
    /// Operations with a JSON success response that no answer came from, as `METHOD /path`.
    pub unanswered: Vec<String>,
    /// Answers not valid against their documented schema (a success's, or an error's
    /// envelope), with the problems.
    pub invalid: Vec<String>,
    /// `schema.property` present in every answer that had the schema, yet not required.
    pub loose: Vec<String>,
    /// How many answers (successes and errors) were held to a schema.
    pub checked: usize,
}

/// What the answers showed of one schema: how often an object of it was seen, how often each
/// of its properties was there, and what it requires.
#[derive(Debug, Default)]
struct Seen {
    objects: usize,
    present: BTreeMap<String, usize>,
    properties: BTreeSet<String>,
    required: BTreeSet<String>,
}

struct Walker<'a> {
    components: &'a Value,
    seen: BTreeMap<String, Seen>,
    /// Validators compiled so far, by the text of their schema: compiling one takes in the
    /// document's every component (the time-zone pattern among them), and one suite's
    /// answers hold to a few hundred schemas thousands of times.
    validators: RefCell<HashMap<String, Rc<Result<jsonschema::Validator, String>>>>,
}

/// Holds `answers` to the API's document (`api`, for [`Service::Api`]) and the admin API's
/// (`admin`).
pub fn check(api: &Value, admin: &Value, answers: &[Answer]) -> Findings {
    let mut findings = Findings::default();
    let mut answered = BTreeSet::new();
    let mut walkers = [
        (Service::Api, api, Walker::new(api)),
        (Service::Admin, admin, Walker::new(admin)),
    ];
    for answer in answers {
        let (_, doc, walker) = walkers
            .iter_mut()
            .find(|(service, _, _)| *service == answer.service)
            .expect("both services");
        let Some(template) = template_of(doc, &answer.method, &answer.path) else {
            continue;
        };
        let operation = format!("{} {template}", answer.method);
        let Some(schema) = response_schema(doc, &answer.method, &template, answer.status.as_str())
        else {
            continue;
        };
        let is_json = answer
            .content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/json"));
        // A `HEAD` answer has no body to hold to its schema.
        if !is_json || answer.method == Method::HEAD {
            continue;
        }
        findings.checked += 1;
        let problems = walker.problems(schema, &answer.body);
        if !problems.is_empty() {
            findings.invalid.push(format!(
                "{operation} ({}): {problems:?}\n{}",
                answer.status, answer.body
            ));
        }
        // Error answers are held to their envelope (its code among the listed ones); what
        // the answers show of required fields is the successes' business.
        if answer.status.is_success() {
            answered.insert((answer.service, operation.clone()));
            walker.walk(schema, &answer.body, &operation);
        }
    }
    for (service, doc, walker) in &walkers {
        for operation in json_operations(doc) {
            if !answered.contains(&(*service, operation.clone())) {
                let prefix = if *service == Service::Admin {
                    "admin "
                } else {
                    ""
                };
                findings.unanswered.push(format!("{prefix}{operation}"));
            }
        }
        for (location, seen) in &walker.seen {
            for property in &seen.properties {
                let always = seen.present.get(property).copied().unwrap_or(0) == seen.objects;
                if seen.objects > 0 && always && !seen.required.contains(property) {
                    findings.loose.push(format!("{location}.{property}"));
                }
            }
        }
    }
    findings
}

impl<'a> Walker<'a> {
    fn new(doc: &'a Value) -> Self {
        Walker {
            components: &doc["components"],
            seen: BTreeMap::new(),
            validators: RefCell::default(),
        }
    }

    fn walk(&mut self, schema: &Value, value: &Value, location: &str) {
        if let Some(target) = schema["$ref"].as_str() {
            let name = target.rsplit('/').next().unwrap_or(target);
            let resolved = &self.components["schemas"][name];
            self.walk(resolved, value, name);
            return;
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(branches) = schema[key].as_array() {
                // `null` fits only `{"type": "null"}`, and nothing else fits that: the branches
                // of a nullable field need no validator.
                let typed: Vec<&Value> = branches
                    .iter()
                    .filter(|branch| branch["type"] != "null")
                    .collect();
                let fitting: Vec<&Value> = match (value, typed.as_slice()) {
                    (Value::Null, _) => Vec::new(),
                    (_, [only]) => vec![*only],
                    _ => typed
                        .into_iter()
                        .filter(|branch| self.fits(branch, value))
                        .collect(),
                };
                if let [only] = fitting.as_slice() {
                    self.walk(only, value, location);
                }
            }
        }
        if let Some(parts) = schema["allOf"].as_array() {
            for part in parts {
                self.walk(part, value, location);
            }
        }
        match value {
            Value::Object(members) => {
                if let Some(properties) = schema["properties"].as_object() {
                    let seen = self.seen.entry(location.to_owned()).or_default();
                    seen.objects += 1;
                    seen.properties.extend(properties.keys().cloned());
                    if let Some(required) = schema["required"].as_array() {
                        seen.required
                            .extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    for name in members.keys().filter(|name| properties.contains_key(*name)) {
                        *seen.present.entry(name.clone()).or_default() += 1;
                    }
                    for (name, member) in members {
                        if let Some(inner) = properties.get(name) {
                            self.walk(inner, member, &format!("{location}.{name}"));
                        }
                    }
                }
                if schema["additionalProperties"].is_object() {
                    let inner = &schema["additionalProperties"];
                    let known = schema["properties"].as_object();
                    for (name, member) in members {
                        if !known.is_some_and(|k| k.contains_key(name)) {
                            self.walk(inner, member, &format!("{location}.*"));
                        }
                    }
                }
            }
            Value::Array(items) if schema["items"].is_object() => {
                for item in items {
                    self.walk(&schema["items"], item, &format!("{location}[]"));
                }
            }
            _ => {}
        }
    }

    /// Whether `value` is valid against `branch` (of a `oneOf` or `anyOf`).
    fn fits(&self, branch: &Value, value: &Value) -> bool {
        self.validator(branch)
            .as_ref()
            .as_ref()
            .is_ok_and(|validator| validator.is_valid(value))
    }

    /// What makes `value` invalid against `schema`.
    fn problems(&self, schema: &Value, value: &Value) -> Vec<String> {
        match self.validator(schema).as_ref() {
            Ok(validator) => validator
                .iter_errors(value)
                .map(|error| format!("{} at {}", error, error.instance_path()))
                .collect(),
            Err(error) => vec![format!("the schema does not compile: {error}")],
        }
    }

    /// The validator of `schema`, against the document's components, compiled once.
    fn validator(&self, schema: &Value) -> Rc<Result<jsonschema::Validator, String>> {
        let key = schema.to_string();
        if let Some(compiled) = self.validators.borrow().get(&key) {
            return Rc::clone(compiled);
        }
        let root = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "allOf": [schema],
            "components": self.components,
        });
        let compiled = Rc::new(jsonschema::validator_for(&root).map_err(|e| e.to_string()));
        self.validators
            .borrow_mut()
            .insert(key, Rc::clone(&compiled));
        compiled
    }
}

/// The document's path template that `path` fills in, preferring literal segments.
fn template_of(doc: &Value, method: &Method, path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').collect();
    let method = method.as_str().to_lowercase();
    doc["paths"]
        .as_object()?
        .iter()
        .filter(|(_, item)| item.get(&method).is_some())
        .filter_map(|(template, _)| {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literals = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                if part.starts_with('{') && part.ends_with('}') {
                    if segment.is_empty() {
                        return None;
                    }
                } else if part == segment {
                    literals += 1;
                } else {
                    return None;
                }
            }
            Some((literals, template.clone()))
        })
        .max()
        .map(|(_, template)| template)
}

fn response_schema<'a>(
    doc: &'a Value,
    method: &Method,
    template: &str,
    status: &str,
) -> Option<&'a Value> {
    let response = &doc["paths"][template][method.as_str().to_lowercase()]["responses"][status];
    let schema = &response["content"]["application/json"]["schema"];
    schema.is_object().then_some(schema)
}

/// Every `METHOD /path` of `doc` with a JSON success response.
fn json_operations(doc: &Value) -> Vec<String> {
    let mut operations = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            let json_success = operation["responses"].as_object().is_some_and(|responses| {
                responses.iter().any(|(status, response)| {
                    status.starts_with('2') && response["content"]["application/json"].is_object()
                })
            });
            if json_success {
                operations.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    operations
}
