#!/bin/sh
exec python3 server.py
