# Taskkeeper's two commands:
#   make run    build the UI and the tray app, and run it
#   make test   install what is missing, check formatting and clippy, then run every test
#               (Rust, UI, the real app under Xvfb, the browser)
# Both install the Debian/Ubuntu packages and npm packages they need first.

SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build the app: build-essential pkg-config libwebkit2gtk-4.1-dev. Run it:
# libayatana-appindicator3-1. Test it headless: xvfb dbus dbus-x11 webkit2gtk-driver;
# browser tests: chromium. Node and npm build ui/.
APT_PACKAGES := build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-1 \
	xvfb dbus dbus-x11 webkit2gtk-driver chromium tmux curl python3

.PHONY: run test deps apt npm ui lint test-rust test-ui test-browser package clean

run: deps ui
	$(CARGO) run -p taskkeeper-app

test: deps ui lint test-rust test-ui test-browser

deps: apt npm

# Installs only what is missing, so a warm machine pays one dpkg query.
apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

npm:
	@if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then \
		cd ui && npm ci --no-audit --no-fund; \
	fi

ui:
	cd ui && npm run build

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

test-ui:
	cd ui && npm test

# The web UI in headless Chromium against a real `taskkeeper serve --ui` (ui/e2e); screenshots
# land in tests/artifacts/browser/.
test-browser: npm ui
	$(CARGO) build -p taskkeeper-cli
	cd ui && TASKKEEPER_BIN="$${CARGO_TARGET_DIR:-$(CURDIR)/target}/debug/taskkeeper" npm run test:browser

# The tray app as a .deb, built by the Tauri CLI from npm (pinned; `npx` caches it), which
# builds ui/ first (beforeBuildCommand) and then a release binary. Not part of `make test`:
# a release build takes minutes. The package lands in
# ${CARGO_TARGET_DIR:-target}/release/bundle/deb/.
TAURI_CLI := @tauri-apps/cli@2.12.5
package: deps
	npx --yes $(TAURI_CLI) build --bundles deb -- -p taskkeeper-app

clean:
	$(CARGO) clean
	rm -rf ui/dist ui/node_modules
