"""The collaboration service in front of the nodes: what is said to it.

* :mod:`.preflight`: what an access token says about itself, checked before a call.
* :mod:`.operations`: long-running operations: paths, list, show, watch, update.
* :mod:`.resolve`: stopped operations found, decided, resolved and watched.
* :mod:`.workspaces`: creating a workspace (202 and an operation to watch).

Which service and token to use is :mod:`nodecli.profiles.service`.
"""
