"""Node users and transfer users: the changes and queries over the store
(manage), the export format and import (user_data), password hashes (passwords)
and transfer restrictions (restrictions)."""
