//! The tray app's build script. tauri-build finds `tauri.conf.json` beside this file by itself,
//! but it must be told where the capabilities live (in `src/`): a plain `tauri_build::build()`
//! would look in `./capabilities` and silently embed none (docs/tauri.md §3).

fn main() {
    println!("cargo:rerun-if-changed=src/capabilities");
    println!("cargo:rerun-if-changed=tauri.conf.json");
    println!("cargo:rerun-if-changed=../../ui/dist");
    // The config embeds ui/dist at compile time; say how to make it rather than let the
    // context macro fail with a bare "path doesn't exist".
    if !std::path::Path::new("../../ui/dist/index.html").exists() {
        eprintln!("ui/dist is missing: build the UI first with `cd ui && npm ci && npm run build`");
        std::process::exit(1);
    }
    let attributes =
        tauri_build::Attributes::new().capabilities_path_pattern("./src/capabilities/**/*");
    if let Err(error) = tauri_build::try_build(attributes) {
        // A build script reports through its exit status; the message is what the developer reads.
        eprintln!("tauri build script failed: {error:#}");
        std::process::exit(1);
    }
}
