#!/bin/sh
# Debian's chromium for the report.html browser test (tests/integration/test_report_html.py); nothing to do where it is
# installed. Exits non-zero, with the reason on stderr, where it cannot be installed: that test then skips.
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ]; then echo "chromium is not installed and installing it needs root (apt-get)" >&2; exit 1; fi
if ! command -v apt-get >/dev/null 2>&1; then echo "chromium is not installed and there is no apt-get" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null || {
    echo "apt-get install chromium failed" >&2; exit 1; }
command -v chromium >/dev/null 2>&1
