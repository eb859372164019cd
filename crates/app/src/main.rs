//! The `taskkeeper-app` binary: the tray app. Everything lives in the library
//! (`taskkeeper_app_lib`) so tests can drive the same wiring on Tauri's mock runtime.

// A release build on Windows is a GUI program: no console window next to the tray icon.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    taskkeeper_app_lib::main()
}
