#!/bin/bash
touch /app/ready
rm -- "$0"
