'use strict';
// require('kilnjs/node'): see load.cjs
module.exports = require('./load.cjs')(() => require('../node.js'), 'kilnjs/node');
