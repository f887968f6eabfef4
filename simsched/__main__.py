"""``python -m simsched`` entry point."""

from simsched.cli import main

raise SystemExit(main())
