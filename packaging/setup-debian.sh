# Sourced by the README commands: installs what a fresh Debian 12 machine
# lacks (a C compiler; Rust through rustup if cargo is missing).
if ! command -v cc >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] || {
        echo "cargo not found: install Rust with rustup (https://rustup.rs), then re-run" >&2
        exit 1
    }
    export PATH="$HOME/.cargo/bin:$PATH"
fi
