"""The Prefect front end of the pipeline (the flow, `prepare serve`, the demo's local servers).

Importing this package turns Prefect's outbound calls off by default, before Prefect itself is imported: these
processes handle personal data, and Prefect's SDK analytics start on `import prefect` (DO_NOT_TRACK), its
server's telemetry with the server (PREFECT_SERVER_ANALYTICS_ENABLED), both calling prefect.io. A value the
user exported wins. The temporary server a flow starts, the servers of flows.services and the Dask workers
of a run (flows.prepare.check_workers) get the same environment."""
from __future__ import annotations

import os

OFFLINE_ENV = {
    "DO_NOT_TRACK": "1",  # Prefect's SDK analytics (and other tools that honour the convention)
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",  # the server's telemetry heartbeat to sens-o-matic.prefect.io
    "PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT": "false",  # the UI's upgrade prompts fetched from prefect.io
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",  # run traces, sent only to Prefect Cloud
}


# A temporary Prefect server (a flow run without PREFECT_API_URL, on a Dask cluster too: flows.cluster's
# one_prefect_api) had Prefect's 20 s to answer: on a busy machine it needs more, and `prepare run
# --dask-address` failed with "internal error (RuntimeError)" before a record was read.
SERVER_START_ENV = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"}


def quiet_environment() -> None:
    """OFFLINE_ENV and SERVER_START_ENV as defaults of this process's environment (inherited by the processes it
    starts)."""
    for key, value in {**OFFLINE_ENV, **SERVER_START_ENV}.items():
        os.environ.setdefault(key, value)


quiet_environment()
