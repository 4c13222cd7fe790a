'use strict';
// require('kilnjs'): see load.cjs
module.exports = require('./load.cjs')(() => require('../index.js'), 'kilnjs');
