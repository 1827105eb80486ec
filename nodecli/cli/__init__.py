"""The click command tree. Commands parse, call the domain, render: nothing else."""
