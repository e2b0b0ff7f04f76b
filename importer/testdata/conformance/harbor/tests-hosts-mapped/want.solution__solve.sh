#!/bin/sh
wget -qO /workspace/front.html http://shop.acme-widgets.com/
