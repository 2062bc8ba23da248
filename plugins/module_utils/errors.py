# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors raised by the shared core; modules turn them into ``fail_json`` calls."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class FleetError(Exception):
    """A failure with a message fit for the user.

    ``details`` are extra result keys (never secrets) that the module wrapper adds to ``fail_json``.
    """

    def __init__(self, msg, **details):
        super(FleetError, self).__init__(msg)
        self.msg = msg
        self.details = details


class WaitTimeout(FleetError):
    """A wait ran out of time; the message says what was awaited and what was last seen."""
