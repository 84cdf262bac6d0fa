"""The process, not the problem: compatibility with dependencies' private names (compat), the CPUs this process may
use (cpus), the start-up tricks of short CLI processes (startup), and freed heap memory handed back (memory).

Nothing here is imported eagerly: ``rankcli --help`` loads only what it needs."""
