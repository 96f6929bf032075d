"""`bespoke leaderboard`, `compare`: reading results."""
