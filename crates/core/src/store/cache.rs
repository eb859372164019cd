//! What the store keeps in memory between reads (the settings, desks by name), and the
//! generation that keeps a read begun before a write from putting back what it read.

use crate::desk::Desk;
use crate::settings::Settings;

/// The settings as last read from the table, so that the many callers of
/// [`crate::Store::settings`] (every A2A call asks for the limits) do not each read and parse the
/// table. Only this process writes the database (the lock file), and only
/// [`crate::Store::set_setting`] writes settings: it empties the cache after its commit and moves
/// the generation on, so a read that began before the commit cannot put back what it read.
#[derive(Debug, Default)]
pub(super) struct SettingsCache {
    pub(super) generation: u64,
    pub(super) settings: Option<Settings>,
}

/// Desks as last read by name, so that the desk every A2A call names is looked up in memory
/// (the same reasoning as [`SettingsCache`]): every write of a desk ([`crate::Store::desk_write`])
/// empties it after its commit and moves the generation on. Only desks that exist are kept.
#[derive(Debug, Default)]
pub(super) struct DeskCache {
    pub(super) generation: u64,
    pub(super) desks: std::collections::HashMap<String, Desk>,
    /// The desks set to launch by themselves, as [`crate::Store::auto_launch_desks`] last read
    /// them, so the auto-launch loop can tell from memory whether a change concerns it.
    pub(super) auto_launch: Option<Vec<Desk>>,
}
