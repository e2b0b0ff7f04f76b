#!/bin/sh
fortune > /app/fortune.txt
