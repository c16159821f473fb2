"""Running processes found by their environment (not a test module): the
servers a test started carry a variable of the test's own, so that what is
left of them can be found, whichever namespace or session they are in.

    running_with_env("AGF_TEST_HOSTS=agfh-123-")             # entries starting so
    running_with_env("SCCACHE_SERVER_PORT=4226", exact=True) # that entry exactly
"""

import os


def running_with_env(entry: str, exact: bool = False) -> list:
    """Pids of running (non-zombie) processes whose environment has an
    entry equal to `entry` (exact) or starting with it."""
    needle = entry.encode()
    pids = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (needle in env if exact else any(e.startswith(needle) for e in env)):
            pids.append(int(name))
    return pids
