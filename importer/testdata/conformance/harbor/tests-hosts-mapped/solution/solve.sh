#!/bin/sh
wget -qO /app/front.html http://shop.acme-widgets.com/
