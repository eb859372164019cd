# Taskkeeper's two commands:
#   make run    build the UI and the tray app, and run it
#   make test   install what is missing, check formatting and clippy, then run every test
#               (Rust, UI, the real app under Xvfb, the browser tests, and the .deb installed
#               and removed again)
# Both install the Debian/Ubuntu packages and npm packages they need first.

SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build the app: build-essential pkg-config libwebkit2gtk-4.1-dev. Run it:
# libayatana-appindicator3-1. Test it headless: xvfb dbus dbus-x11 webkit2gtk-driver;
# browser tests: chromium. Node and npm build ui/. The Codex and Gemini tests run in a
# loopback-only network namespace: unshare (util-linux) and ip (iproute2); the test of an
# asker on another machine makes two namespaces and a veth pair with ip (as root) and asks
# with curl there.
APT_PACKAGES := build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-1 \
	xvfb dbus dbus-x11 webkit2gtk-driver chromium tmux curl python3 iproute2

.PHONY: run test deps apt npm ui ui-types lint test-rust test-conformance test-ui test-browser package test-package test-leftovers clean

run: deps ui
	$(CARGO) run -p taskkeeper-app

# test-package last: a cold release build is the slowest step (about 20 min on a loaded
# 2-core machine, under 4 min warm, since ${CARGO_TARGET_DIR} outlives the clone).
test: deps ui lint test-rust test-conformance test-ui test-browser test-package test-leftovers

# Every process a test starts carries this run's mark, so tests/leftovers.sh can tell at the
# end whether one was left running (a daemon, a tmux server, a browser) and fail if so.
ifndef TASKKEEPER_TEST_RUN
TASKKEEPER_TEST_RUN := $(shell date +%s%N)
endif
export TASKKEEPER_TEST_RUN
test-leftovers:
	tests/leftovers.sh

deps: apt npm

# Installs only what is missing, so a warm machine pays one dpkg query.
apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The UI's packages, and the A2A JavaScript SDK the network test's asker runs
# (tests/interop/js; crates/cli/tests/it/network_asker.rs).
npm:
	@for dir in ui tests/interop/js; do \
		if [ ! -d $$dir/node_modules ] || [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
			(cd $$dir && npm ci --no-audit --no-fund) || exit 1; \
		fi; \
	done

ui:
	cd ui && npm run build

# The UI's wire types (ui/src/generated/wire.ts) from the daemon's Rust types; `test-rust`
# fails while the checked-in file differs (crates/server/src/owner/ui_types.rs).
ui-types:
	UPDATE_UI_TYPES=1 $(CARGO) test -p taskkeeper-server --lib ui_types

# Unformatted code or a clippy warning (the workspace lints, `-D warnings`) fails the build.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-rust:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast; \
	else \
		$(CARGO) test --workspace --no-fail-fast; \
	fi

# The official A2A conformance kit (shared/tools/a2a-tck, beside the clone) against a real
# `taskkeeper serve --conformance` (tests/conformance/run.sh), v1.0 over all three bindings and
# v0.3: red on a v1.0 MUST failure or a v0.3 mandatory one. Its cache (A2A_TCK_CACHE) lives beside ${CARGO_TARGET_DIR}, outside the
# clone; the first run fetches the kit's Python packages.
test-conformance:
	$(CARGO) build -p taskkeeper-cli
	tests/conformance/run.sh

test-ui:
	cd ui && npm test

# The web UI in headless Chromium against a real `taskkeeper serve --ui` (ui/e2e); screenshots
# land in tests/artifacts/browser/.
test-browser: npm ui
	$(CARGO) build -p taskkeeper-cli
	cd ui && TASKKEEPER_BIN="$${CARGO_TARGET_DIR:-$(CURDIR)/target}/debug/taskkeeper" npm run test:browser

# The whole product as the platform's package, built by the Tauri CLI from npm (pinned;
# `npx` caches it): the tray app, and beside it the `taskkeeper` CLI (the hook helper,
# `serve`, every verb) as its sidecar (bundle.externalBin). The sidecar is only named here,
# not in tauri.conf.json, since tauri-build copies it on every build of the app and a plain
# `cargo build` has no release CLI to copy. The CLI is built first and hard-linked under the
# target-triple name the bundler looks for. Linux: a .deb (`/usr/bin/taskkeeper-app` and
# `/usr/bin/taskkeeper`); macOS: Taskkeeper.app (both in Contents/MacOS) and a .dmg;
# Windows (Git Bash): an NSIS installer. The app is built with the `dist` profile
# (Cargo.toml: whole-program LTO, for a smaller tray process); it lands in
# ${CARGO_TARGET_DIR:-target}/dist/bundle/.
TAURI_CLI := @tauri-apps/cli@2.12.5
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
HOST_TRIPLE = $(shell rustc -vV | sed -n 's/^host: //p')
UNAME := $(shell uname -s)
, := ,
BUNDLES := $(if $(filter Darwin,$(UNAME)),app$(,)dmg,$(if $(findstring _NT,$(UNAME)),nsis,deb))
EXE := $(if $(findstring _NT,$(UNAME)),.exe,)
package: deps
	$(CARGO) build --release --locked -p taskkeeper-cli
	ln -f "$(TARGET_DIR)/release/taskkeeper$(EXE)" "$(TARGET_DIR)/release/taskkeeper-$(HOST_TRIPLE)$(EXE)"
	npx --yes $(TAURI_CLI) build --bundles $(BUNDLES) \
		--config '{"bundle":{"externalBin":["$(TARGET_DIR)/release/taskkeeper"]}}' \
		-- -p taskkeeper-app --profile dist --locked

# The .deb as a user installs it (tests/package/run.sh): dpkg -i, both commands from
# /usr/bin, connect into a throwaway HOME, the hook helper through what connect wrote against
# the installed `taskkeeper serve`, dpkg -r, nothing left. Needs root or sudo.
test-package: package
	tests/package/run.sh

clean:
	$(CARGO) clean
	rm -rf ui/dist ui/node_modules
