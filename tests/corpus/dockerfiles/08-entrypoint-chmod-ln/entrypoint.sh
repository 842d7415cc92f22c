#!/bin/sh
exec python3 /opt/app/run.py "$@"
