// `require("edge-offload/sqlite")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../store/sqlite.js", "edge-offload/sqlite");
