// `require("edge-offload/hono")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../toolkit/hono.js", "edge-offload/hono");
