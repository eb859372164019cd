//! The settings catalogue on the wire (`GET /api/settings/catalogue`, the app's
//! `get_settings_catalogue`): core's settings table as the settings panel draws its fields
//! from it and `taskkeeper settings list` prints it, so neither restates a key, a range or a
//! unit.

use serde::{Deserialize, Serialize};
use taskkeeper_core::settings::{Kind, Setting};

/// What a setting's value is (`core::settings::Kind`); a count's and a size's range are
/// [`SettingView::min`] and [`SettingView::max`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "SettingKind"))]
#[serde(rename_all = "kebab-case")]
pub enum SettingKindView {
    Duration,
    Ladder,
    Count,
    Bytes,
    Bool,
    Shortcut,
    TimeOfDay,
    /// Words in the forms [`SettingView::expected`] says (an address, a URL, a path, a name).
    Text,
}

/// One setting, as the settings panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SettingView {
    pub key: String,
    /// The heading it shows under.
    pub group: String,
    pub label: String,
    /// What it does, in a sentence.
    pub help: String,
    pub kind: SettingKindView,
    /// The smallest value a count or a size takes (a size in bytes); `null` for other kinds.
    pub min: Option<u64>,
    /// The largest, likewise.
    pub max: Option<u64>,
    /// The units a value is written in (`s`, `m`, `h`, `d`; `B`, `KiB`, `MiB`), if any.
    pub units: Vec<String>,
    /// Its value until the owner changes it.
    pub default: String,
    /// What it accepts, in the words the daemon's refusal uses.
    pub expected: String,
    /// Listed by the panel and `taskkeeper settings list`.
    pub shown: bool,
}

/// `GET /api/settings/catalogue`: every setting, in the order the panel shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SettingsCatalogue {
    pub settings: Vec<SettingView>,
}

impl From<&Setting> for SettingView {
    fn from(s: &Setting) -> Self {
        let kind = s.kind();
        let (kind_view, range) = match kind {
            Kind::Duration => (SettingKindView::Duration, None),
            Kind::Ladder => (SettingKindView::Ladder, None),
            Kind::Count { min, max } => (SettingKindView::Count, Some((min, max))),
            Kind::Bytes { min, max } => (SettingKindView::Bytes, Some((min, max))),
            Kind::Bool => (SettingKindView::Bool, None),
            Kind::Shortcut => (SettingKindView::Shortcut, None),
            Kind::TimeOfDay => (SettingKindView::TimeOfDay, None),
            Kind::Text { .. } => (SettingKindView::Text, None),
        };
        Self {
            key: s.key.to_owned(),
            group: s.group.name().to_owned(),
            label: s.label.to_owned(),
            help: s.help.to_owned(),
            kind: kind_view,
            min: range.map(|(min, _)| min),
            max: range.map(|(_, max)| max),
            units: kind.units().iter().map(|u| (*u).to_owned()).collect(),
            default: s.default.to_owned(),
            expected: kind.expected(),
            shown: s.shown,
        }
    }
}

impl SettingsCatalogue {
    /// Core's table, whole.
    pub fn of_core() -> Self {
        Self {
            settings: taskkeeper_core::settings::SETTINGS
                .iter()
                .map(SettingView::from)
                .collect(),
        }
    }
}
