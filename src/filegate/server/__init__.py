"""The MCP face of filegate: the only package that imports fastmcp or mcp."""

import os

# fastmcp reads these when it is first imported, and only this package imports it: no banner,
# no update check against PyPI, no `.env` from the user's directory, no exception details
# leaking to the model, no rich log handler, and no OpenTelemetry spans or trace-context
# handling per request (filegate exports no traces; "off" skips fastmcp's span helpers on every
# call, bench/README.md "Issue 28"; an operator who wants spans sets FASTMCP_TELEMETRY_MODE).
FASTMCP_ENV_DEFAULTS = {
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "FASTMCP_ENV_FILE": os.devnull,
    "FASTMCP_MASK_ERROR_DETAILS": "true",
    "FASTMCP_ENABLE_RICH_LOGGING": "false",
    "FASTMCP_TELEMETRY_MODE": "off",
}
for _key, _value in FASTMCP_ENV_DEFAULTS.items():
    os.environ.setdefault(_key, _value)
